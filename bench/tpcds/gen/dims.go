package gen

import (
	"fmt"
	"math"
	"strconv"
)

// rowCtx carries the row being generated and the state its columns share.
type rowCtx struct {
	g   *Generator
	t   *table
	row int64 // 0-based

	bk                int64 // business key (0-based) of history-keeping dimensions
	version, versions int
	addr              address
	sale              saleLine
	ret               returnLine
	cur               orderCursor
}

func (r *rowCtx) reset(row int64) { r.row = row }

// h is a row-level hash for values several columns share.
func (r *rowCtx) h(salt uint64) uint64 {
	return hash4(r.g.cfg.Seed, r.t.def.id, uint64(r.row), salt)
}

// hbk is a hash of the business key: equal for every version of it.
func (r *rowCtx) hbk(salt uint64) uint64 {
	return hash4(r.g.cfg.Seed, r.t.def.id|1<<32, uint64(r.bk), salt)
}

func prepareHistory(r *rowCtx) {
	r.bk, r.version, r.versions = versionOf(r.row)
}

// Record validity of slowly changing dimensions: versions change on
// 1999-10-27 and 2001-10-27.
var recChanges = []int64{julian(1997, 10, 27), julian(1999, 10, 27), julian(2001, 10, 27)}

func colRecStart(r *rowCtx, _ uint64) val {
	return jval(recChanges[r.version])
}

// colRecEnd is NULL for the current version (valid to this day).
func colRecEnd(r *rowCtx, _ uint64) val {
	if r.version == r.versions-1 {
		return nullVal
	}
	return jval(recChanges[r.version+1] - 1)
}

type address struct {
	num                                            int64
	street, stype, suite, city, county, state, zip string
	gmt                                            int64
}

// makeAddress draws an address; local addresses are the stores' and call
// centers' (Williamson County, TN, as in the specification's small scales).
func makeAddress(h uint64, local bool) address {
	s := stream{h}
	a := address{num: between(s.next(), 1, 1000)}
	a.street = pick(s.next(), streetNames)
	if s.next()%3 == 0 {
		a.street += " " + pick(s.next(), streetNames)
	}
	a.stype = pick(s.next(), streetTypes)
	a.suite = "Suite " + strconv.FormatInt(between(s.next(), 0, 99)*10, 10)
	// Counties are skewed (the first ones are the most populous), so that
	// small scales still have several addresses per county.
	ci, co := intn(s.next(), int64(len(cities))), int64(float64(len(counties))*math.Pow(unit(s.next()), 1.5))
	if local {
		ci, co = intn(s.next(), 2), 0
	}
	a.city = cities[ci]
	c := counties[co]
	a.county, a.state, a.gmt = c.county, c.state, c.gmt
	a.zip = zips[mix64(uint64(ci)*131+uint64(co))%uint64(len(zips))]
	return a
}

// addressCols adds the address columns named prefix+suffix.
func addressCols(cols map[string]colFn, prefix string) {
	cols[prefix+"street_number"] = func(r *rowCtx, _ uint64) val { return sval(strconv.FormatInt(r.addr.num, 10)) }
	cols[prefix+"street_name"] = func(r *rowCtx, _ uint64) val { return sval(r.addr.street) }
	cols[prefix+"street_type"] = func(r *rowCtx, _ uint64) val { return sval(r.addr.stype) }
	cols[prefix+"suite_number"] = func(r *rowCtx, _ uint64) val { return sval(r.addr.suite) }
	cols[prefix+"city"] = func(r *rowCtx, _ uint64) val { return sval(r.addr.city) }
	cols[prefix+"county"] = func(r *rowCtx, _ uint64) val { return sval(r.addr.county) }
	cols[prefix+"state"] = func(r *rowCtx, _ uint64) val { return sval(r.addr.state) }
	cols[prefix+"zip"] = func(r *rowCtx, _ uint64) val { return sval(r.addr.zip) }
	cols[prefix+"country"] = constS("United States")
	cols[prefix+"gmt_offset"] = func(r *rowCtx, _ uint64) val { return dval(r.addr.gmt * 100) }
}

func dimCount(name string) func(*Generator) int64 {
	return func(g *Generator) int64 { return dimRows(name, g.cfg.Scale) }
}

func init() {
	registerDims()
	registerFacts()
}

func registerDims() {
	register("date_dim", &tableDef{id: 1, rows: dimCount("date_dim"), cols: dateDimCols()})
	register("time_dim", &tableDef{id: 2, rows: dimCount("time_dim"), cols: timeDimCols()})
	register("income_band", &tableDef{id: 3, rows: dimCount("income_band"), cols: map[string]colFn{
		"ib_income_band_sk": colSK,
		"ib_lower_bound": func(r *rowCtx, _ uint64) val {
			if r.row == 0 {
				return ival(0)
			}
			return ival(r.row*10000 + 1)
		},
		"ib_upper_bound": func(r *rowCtx, _ uint64) val { return ival((r.row + 1) * 10000) },
	}})
	register("household_demographics", &tableDef{id: 4, rows: dimCount("household_demographics"), cols: map[string]colFn{
		"hd_demo_sk":        colSK,
		"hd_income_band_sk": func(r *rowCtx, _ uint64) val { return ival(r.row%20 + 1) },
		"hd_buy_potential":  func(r *rowCtx, _ uint64) val { return sval(buyPotentials[r.row/20%6]) },
		"hd_dep_count":      func(r *rowCtx, _ uint64) val { return ival(r.row / 120 % 10) },
		"hd_vehicle_count":  func(r *rowCtx, _ uint64) val { return ival(r.row/1200%6 - 1) },
	}})
	register("customer_demographics", &tableDef{id: 5, rows: dimCount("customer_demographics"), cols: map[string]colFn{
		"cd_demo_sk": colSK,
		"cd_gender": func(r *rowCtx, _ uint64) val {
			if r.row%2 == 0 {
				return sval("M")
			}
			return sval("F")
		},
		"cd_marital_status":     func(r *rowCtx, _ uint64) val { return sval(maritals[r.row/2%5]) },
		"cd_education_status":   func(r *rowCtx, _ uint64) val { return sval(educations[r.row/10%7]) },
		"cd_purchase_estimate":  func(r *rowCtx, _ uint64) val { return ival((r.row/70%20 + 1) * 500) },
		"cd_credit_rating":      func(r *rowCtx, _ uint64) val { return sval(creditRatings[r.row/1400%4]) },
		"cd_dep_count":          func(r *rowCtx, _ uint64) val { return ival(r.row / 5600 % 7) },
		"cd_dep_employed_count": func(r *rowCtx, _ uint64) val { return ival(r.row / 39200 % 7) },
		"cd_dep_college_count":  func(r *rowCtx, _ uint64) val { return ival(r.row / 274400 % 7) },
	}})
	register("ship_mode", &tableDef{id: 6, rows: dimCount("ship_mode"), cols: map[string]colFn{
		"sm_ship_mode_sk": colSK,
		"sm_ship_mode_id": colRowBK,
		"sm_type":         func(r *rowCtx, _ uint64) val { return sval(shipTypes[r.row%int64(len(shipTypes))]) },
		"sm_code":         func(r *rowCtx, _ uint64) val { return sval(shipCodes[r.row%int64(len(shipCodes))]) },
		"sm_carrier":      func(r *rowCtx, _ uint64) val { return sval(carriers[r.row%int64(len(carriers))]) },
		"sm_contract":     func(_ *rowCtx, h uint64) val { return sval(bkey(int64(h >> 40))[8:]) },
	}})
	register("reason", &tableDef{id: 7, rows: dimCount("reason"), cols: map[string]colFn{
		"r_reason_sk": colSK,
		"r_reason_id": colRowBK,
		"r_reason_desc": func(r *rowCtx, _ uint64) val {
			if r.row < int64(len(reasons)) {
				return sval(reasons[r.row])
			}
			return sval(fmt.Sprintf("reason %d", r.row+1))
		},
	}})
	register("customer_address", &tableDef{id: 8, nullBP: 600, rows: dimCount("customer_address"),
		prepare: func(r *rowCtx) { r.addr = makeAddress(r.h(saltAddr), false) },
		cols: func() map[string]colFn {
			c := map[string]colFn{
				"ca_address_sk":    colSK,
				"ca_address_id":    colRowBK,
				"ca_location_type": pickS(locationTypes),
			}
			addressCols(c, "ca_")
			return c
		}()})
	register("customer", &tableDef{id: customerTableID, nullBP: 700, rows: dimCount("customer"), cols: customerCols()})
	register("item", &tableDef{id: 10, nullBP: 50, rows: dimCount("item"), prepare: prepareHistory, cols: itemCols()})
	register("store", &tableDef{id: 11, nullBP: 100, rows: dimCount("store"),
		prepare: func(r *rowCtx) { prepareHistory(r); r.addr = makeAddress(r.hbk(saltAddr), true) },
		cols:    storeCols()})
	register("call_center", &tableDef{id: 12, nullBP: 100, rows: dimCount("call_center"),
		prepare: func(r *rowCtx) { prepareHistory(r); r.addr = makeAddress(r.hbk(saltAddr), true) },
		cols:    callCenterCols()})
	register("warehouse", &tableDef{id: 13, nullBP: 200, rows: dimCount("warehouse"),
		prepare: func(r *rowCtx) { r.addr = makeAddress(r.h(saltAddr), false) },
		cols: func() map[string]colFn {
			c := map[string]colFn{
				"w_warehouse_sk":    colSK,
				"w_warehouse_id":    colRowBK,
				"w_warehouse_name":  textCol(1, 3),
				"w_warehouse_sq_ft": rangeI(50000, 1000000),
			}
			addressCols(c, "w_")
			return c
		}()})
	register("web_site", &tableDef{id: 14, nullBP: 100, rows: dimCount("web_site"),
		prepare: func(r *rowCtx) { prepareHistory(r); r.addr = makeAddress(r.hbk(saltAddr), false) },
		cols:    webSiteCols()})
	register("web_page", &tableDef{id: 15, nullBP: 250, rows: dimCount("web_page"), prepare: prepareHistory, cols: webPageCols()})
	register("promotion", &tableDef{id: 16, nullBP: 200, rows: dimCount("promotion"), cols: promotionCols()})
	register("catalog_page", &tableDef{id: 17, nullBP: 200, rows: dimCount("catalog_page"), cols: map[string]colFn{
		"cp_catalog_page_sk": colSK,
		"cp_catalog_page_id": colRowBK,
		"cp_start_date_sk": func(r *rowCtx, _ uint64) val {
			return ival(salesFirst + r.row/108*30)
		},
		"cp_end_date_sk": func(r *rowCtx, _ uint64) val {
			return ival(salesFirst + r.row/108*30 + 90)
		},
		"cp_department":          constS("DEPARTMENT"),
		"cp_catalog_number":      func(r *rowCtx, _ uint64) val { return ival(r.row/108 + 1) },
		"cp_catalog_page_number": func(r *rowCtx, _ uint64) val { return ival(r.row%108 + 1) },
		"cp_description":         textCol(5, 12),
		"cp_type":                pickS(catalogTypes),
	}})
}

func dateDimCols() map[string]colFn {
	jd := func(r *rowCtx) int64 { return dateDimFirst + r.row }
	ymd := func(r *rowCtx) (int64, int64, int64) { return civil(jd(r) - julianEpoch) }
	dow := func(r *rowCtx) int64 { return (jd(r) + 1) % 7 } // 0 = Sunday
	weekSeq := func(r *rowCtx) int64 { return (r.row+2)/7 + 1 }
	quarterSeq := func(r *rowCtx) int64 { y, m, _ := ymd(r); return (y-1900)*4 + (m-1)/3 + 1 }
	holiday := func(y, m, d int64) bool {
		_ = y
		return m == 1 && d == 1 || m == 7 && d == 4 || m == 12 && d == 25 || m == 11 && d >= 22 && d <= 28 && (julian(y, m, d)+1)%7 == 4
	}
	yn := func(b bool) val {
		if b {
			return sval("Y")
		}
		return sval("N")
	}
	return map[string]colFn{
		"d_date_sk":   func(r *rowCtx, _ uint64) val { return ival(jd(r)) },
		"d_date_id":   func(r *rowCtx, _ uint64) val { return sval(bkey(jd(r))) },
		"d_date":      func(r *rowCtx, _ uint64) val { return jval(jd(r)) },
		"d_month_seq": func(r *rowCtx, _ uint64) val { y, m, _ := ymd(r); return ival((y-1900)*12 + m - 1) },
		"d_week_seq":  func(r *rowCtx, _ uint64) val { return ival(weekSeq(r)) },
		"d_quarter_seq": func(r *rowCtx, _ uint64) val {
			return ival(quarterSeq(r))
		},
		"d_year":           func(r *rowCtx, _ uint64) val { y, _, _ := ymd(r); return ival(y) },
		"d_dow":            func(r *rowCtx, _ uint64) val { return ival(dow(r)) },
		"d_moy":            func(r *rowCtx, _ uint64) val { _, m, _ := ymd(r); return ival(m) },
		"d_dom":            func(r *rowCtx, _ uint64) val { _, _, d := ymd(r); return ival(d) },
		"d_qoy":            func(r *rowCtx, _ uint64) val { _, m, _ := ymd(r); return ival((m-1)/3 + 1) },
		"d_fy_year":        func(r *rowCtx, _ uint64) val { y, _, _ := ymd(r); return ival(y) },
		"d_fy_quarter_seq": func(r *rowCtx, _ uint64) val { return ival(quarterSeq(r)) },
		"d_fy_week_seq":    func(r *rowCtx, _ uint64) val { return ival(weekSeq(r)) },
		"d_day_name":       func(r *rowCtx, _ uint64) val { return sval(dayNames[dow(r)]) },
		"d_quarter_name": func(r *rowCtx, _ uint64) val {
			y, m, _ := ymd(r)
			return sval(fmt.Sprintf("%dQ%d", y, (m-1)/3+1))
		},
		"d_holiday": func(r *rowCtx, _ uint64) val { return yn(holiday(ymd(r))) },
		"d_weekend": func(r *rowCtx, _ uint64) val { d := dow(r); return yn(d == 0 || d == 6) },
		"d_following_holiday": func(r *rowCtx, _ uint64) val {
			y, m, d := civil(jd(r) - 1 - julianEpoch)
			return yn(holiday(y, m, d))
		},
		"d_first_dom": func(r *rowCtx, _ uint64) val { y, m, _ := ymd(r); return ival(julian(y, m, 1)) },
		"d_last_dom": func(r *rowCtx, _ uint64) val {
			y, m, _ := ymd(r)
			if m == 12 {
				return ival(julian(y+1, 1, 1) - 1)
			}
			return ival(julian(y, m+1, 1) - 1)
		},
		"d_same_day_ly":     func(r *rowCtx, _ uint64) val { return ival(jd(r) - 365) },
		"d_same_day_lq":     func(r *rowCtx, _ uint64) val { return ival(jd(r) - 91) },
		"d_current_day":     constS("N"),
		"d_current_week":    constS("N"),
		"d_current_month":   constS("N"),
		"d_current_quarter": constS("N"),
		"d_current_year":    constS("N"),
	}
}

func timeDimCols() map[string]colFn {
	hour := func(r *rowCtx) int64 { return r.row / 3600 }
	return map[string]colFn{
		"t_time_sk": func(r *rowCtx, _ uint64) val { return ival(r.row) },
		"t_time_id": colRowBK,
		"t_time":    func(r *rowCtx, _ uint64) val { return ival(r.row) },
		"t_hour":    func(r *rowCtx, _ uint64) val { return ival(hour(r)) },
		"t_minute":  func(r *rowCtx, _ uint64) val { return ival(r.row / 60 % 60) },
		"t_second":  func(r *rowCtx, _ uint64) val { return ival(r.row % 60) },
		"t_am_pm": func(r *rowCtx, _ uint64) val {
			if hour(r) < 12 {
				return sval("AM")
			}
			return sval("PM")
		},
		"t_shift": func(r *rowCtx, _ uint64) val {
			switch h := hour(r); {
			case h < 8:
				return sval("third")
			case h < 16:
				return sval("first")
			}
			return sval("second")
		},
		"t_sub_shift": func(r *rowCtx, _ uint64) val {
			switch h := hour(r); {
			case h >= 6 && h < 12:
				return sval("morning")
			case h >= 12 && h < 17:
				return sval("afternoon")
			case h >= 17 && h < 21:
				return sval("evening")
			}
			return sval("night")
		},
		"t_meal_time": func(r *rowCtx, _ uint64) val {
			switch h := hour(r); {
			case h >= 6 && h < 9:
				return sval("breakfast")
			case h >= 11 && h < 14:
				return sval("lunch")
			case h >= 17 && h < 20:
				return sval("dinner")
			}
			return nullVal
		},
	}
}

func customerCols() map[string]colFn {
	first := func(r *rowCtx) string { return pick(r.h(saltName), firstNames) }
	last := func(r *rowCtx) string { return pick(r.h(saltName+100), lastNames) }
	firstSales := func(r *rowCtx) int64 { return between(r.h(saltDate), julian(1995, 1, 1), salesLast) }
	return map[string]colFn{
		"c_customer_sk":      colSK,
		"c_customer_id":      colRowBK,
		"c_current_cdemo_sk": func(r *rowCtx, h uint64) val { return ival(between(h, 1, r.g.nCDemo)) },
		"c_current_hdemo_sk": func(r *rowCtx, h uint64) val { return ival(between(h, 1, r.g.nHDemo)) },
		"c_current_addr_sk":  func(r *rowCtx, h uint64) val { return ival(between(h, 1, r.g.nAddress)) },
		// (Generator.customerCurrent recomputes these three for the facts.)
		"c_first_shipto_date_sk": func(r *rowCtx, _ uint64) val { return ival(firstSales(r) + 30) },
		"c_first_sales_date_sk":  func(r *rowCtx, _ uint64) val { return ival(firstSales(r)) },
		"c_salutation":           pickS(salutations),
		"c_first_name":           func(r *rowCtx, _ uint64) val { return sval(first(r)) },
		"c_last_name":            func(r *rowCtx, _ uint64) val { return sval(last(r)) },
		"c_preferred_cust_flag":  yesNo(0.5),
		"c_birth_day":            rangeI(1, 28),
		"c_birth_month":          rangeI(1, 12),
		"c_birth_year":           rangeI(1924, 1992),
		"c_birth_country":        pickS(countries),
		"c_login":                func(*rowCtx, uint64) val { return nullVal },
		"c_email_address": func(r *rowCtx, h uint64) val {
			return sval(first(r) + "." + last(r) + "@" + word(syllables, intn(h, 1000)) + ".com")
		},
		"c_last_review_date_sk": dateSK(julian(2002, 1, 1), julian(2003, 1, 1)),
	}
}

// itemClass returns the 0-based category and class of an item's business key.
func itemClass(r *rowCtx) (int64, int64) {
	ci := intn(r.hbk(1), int64(len(categories)))
	return ci, intn(r.hbk(2), int64(len(categories[ci].classes)))
}

func itemCols() map[string]colFn {
	brandNum := func(r *rowCtx) int64 { return between(r.hbk(3), 1, 16) }
	// A permutation of the business keys spreads items over all 1000
	// manufacturers, so that filters on one manufacturer id select items
	// even at small scales.
	manufact := func(r *rowCtx) int64 { return r.bk*617%1000 + 1 }
	price := func(r *rowCtx) int64 { return between(r.h(saltPrice), 9, 9999) }
	return map[string]colFn{
		"i_item_sk":        colSK,
		"i_item_id":        colBK,
		"i_rec_start_date": colRecStart,
		"i_rec_end_date":   colRecEnd,
		"i_item_desc":      textCol(3, 20),
		"i_current_price":  func(r *rowCtx, _ uint64) val { return dval(price(r)) },
		"i_wholesale_cost": func(r *rowCtx, h uint64) val {
			return dval(max(pct(price(r), 0.3+0.6*unit(h)), 1))
		},
		"i_brand_id": func(r *rowCtx, _ uint64) val {
			ci, cl := itemClass(r)
			return ival((ci+1)*1000000 + (cl+1)*1000 + brandNum(r))
		},
		"i_brand": func(r *rowCtx, _ uint64) val {
			ci, cl := itemClass(r)
			return sval(word(brandSyllables, cl) + brandSyllables[ci] + " #" + strconv.FormatInt(brandNum(r), 10))
		},
		"i_class_id":     func(r *rowCtx, _ uint64) val { _, cl := itemClass(r); return ival(cl + 1) },
		"i_class":        func(r *rowCtx, _ uint64) val { ci, cl := itemClass(r); return sval(categories[ci].classes[cl]) },
		"i_category_id":  func(r *rowCtx, _ uint64) val { ci, _ := itemClass(r); return ival(ci + 1) },
		"i_category":     func(r *rowCtx, _ uint64) val { ci, _ := itemClass(r); return sval(categories[ci].name) },
		"i_manufact_id":  func(r *rowCtx, _ uint64) val { return ival(manufact(r)) },
		"i_manufact":     func(r *rowCtx, _ uint64) val { return sval(word(syllables, manufact(r))) },
		"i_size":         pickS(sizes),
		"i_formulation":  func(_ *rowCtx, h uint64) val { return sval(strconv.FormatUint(h%1e12, 10) + pick(h>>20, colors)) },
		"i_color":        pickS(colors),
		"i_units":        pickS(units),
		"i_container":    constS("Unknown"),
		"i_manager_id":   rangeI(1, 100),
		"i_product_name": func(r *rowCtx, _ uint64) val { return sval(word(syllables, r.bk+1)) },
	}
}

func storeCols() map[string]colFn {
	c := map[string]colFn{
		"s_store_sk":       colSK,
		"s_store_id":       colBK,
		"s_rec_start_date": colRecStart,
		"s_rec_end_date":   colRecEnd,
		"s_closed_date_sk": func(_ *rowCtx, h uint64) val {
			if h%10 != 0 {
				return nullVal
			}
			return ival(between(h>>8, salesFirst, salesLast))
		},
		"s_store_name":       func(r *rowCtx, _ uint64) val { return sval(word(syllables, r.bk)) },
		"s_number_employees": rangeI(200, 300),
		"s_floor_space":      rangeI(5000000, 10000000),
		"s_hours":            pickS(storeHours),
		"s_manager":          nameCol,
		"s_market_id":        func(r *rowCtx, _ uint64) val { return ival(r.bk*7%10 + 1) },
		"s_geography_class":  constS("Unknown"),
		"s_market_desc":      textCol(5, 15),
		"s_market_manager":   nameCol,
		"s_division_id":      constI(1),
		"s_division_name":    constS("Unknown"),
		"s_company_id":       constI(1),
		"s_company_name":     constS("Unknown"),
		"s_tax_percentage":   rangeDec(0, 11),
	}
	addressCols(c, "s_")
	return c
}

func callCenterCols() map[string]colFn {
	c := map[string]colFn{
		"cc_call_center_sk": colSK,
		"cc_call_center_id": colBK,
		"cc_rec_start_date": colRecStart,
		"cc_rec_end_date":   colRecEnd,
		"cc_closed_date_sk": func(*rowCtx, uint64) val { return nullVal },
		"cc_open_date_sk":   dateSK(julian(1997, 1, 1), julian(1998, 1, 1)),
		"cc_name": func(r *rowCtx, _ uint64) val {
			return sval(callCenterNames[r.bk%int64(len(callCenterNames))])
		},
		"cc_class":          pickS(sizeClasses),
		"cc_employees":      rangeI(1, 70000),
		"cc_sq_ft":          rangeI(1000, 700000),
		"cc_hours":          pickS(storeHours),
		"cc_manager":        nameCol,
		"cc_mkt_id":         rangeI(1, 6),
		"cc_mkt_class":      textCol(3, 8),
		"cc_mkt_desc":       textCol(5, 15),
		"cc_market_manager": nameCol,
		"cc_division":       rangeI(1, 6),
		"cc_division_name":  func(_ *rowCtx, h uint64) val { return sval(word(syllables, between(h, 1, 6))) },
		"cc_company":        rangeI(1, 6),
		"cc_company_name":   func(_ *rowCtx, h uint64) val { return sval(word(syllables, between(h, 1, 6))) },
		"cc_tax_percentage": rangeDec(0, 12),
	}
	addressCols(c, "cc_")
	return c
}

func webSiteCols() map[string]colFn {
	company := func(r *rowCtx) int64 { return r.bk%6 + 1 }
	c := map[string]colFn{
		"web_site_sk":        colSK,
		"web_site_id":        colBK,
		"web_rec_start_date": colRecStart,
		"web_rec_end_date":   colRecEnd,
		"web_name":           func(r *rowCtx, _ uint64) val { return sval("site_" + strconv.FormatInt(r.bk, 10)) },
		"web_open_date_sk":   dateSK(julian(1997, 1, 1), julian(1998, 1, 1)),
		"web_close_date_sk":  func(*rowCtx, uint64) val { return nullVal },
		"web_class":          constS("Unknown"),
		"web_manager":        nameCol,
		"web_mkt_id":         rangeI(1, 6),
		"web_mkt_class":      textCol(3, 8),
		"web_mkt_desc":       textCol(5, 15),
		"web_market_manager": nameCol,
		"web_company_id":     func(r *rowCtx, _ uint64) val { return ival(company(r)) },
		"web_company_name":   func(r *rowCtx, _ uint64) val { return sval(syllables[company(r)]) },
		"web_tax_percentage": rangeDec(0, 12),
	}
	addressCols(c, "web_")
	return c
}

func webPageCols() map[string]colFn {
	return map[string]colFn{
		"wp_web_page_sk":      colSK,
		"wp_web_page_id":      colBK,
		"wp_rec_start_date":   colRecStart,
		"wp_rec_end_date":     colRecEnd,
		"wp_creation_date_sk": dateSK(julian(1997, 1, 1), julian(2000, 1, 1)),
		"wp_access_date_sk":   dateSK(julian(2002, 1, 1), julian(2003, 1, 1)),
		"wp_autogen_flag":     yesNo(0.3),
		"wp_customer_sk":      func(r *rowCtx, h uint64) val { return ival(between(h, 1, r.g.nCustomer)) },
		"wp_url":              constS("http://www.foo.com"),
		"wp_type":             pickS(webPageTypes),
		"wp_char_count":       rangeI(303, 8523),
		"wp_link_count":       rangeI(2, 25),
		"wp_image_count":      rangeI(1, 7),
		"wp_max_ad_count":     rangeI(0, 4),
	}
}

func promotionCols() map[string]colFn {
	start := func(r *rowCtx) int64 { return between(r.h(saltDate), salesFirst-30, salesLast) }
	return map[string]colFn{
		"p_promo_sk":        colSK,
		"p_promo_id":        colRowBK,
		"p_start_date_sk":   func(r *rowCtx, _ uint64) val { return ival(start(r)) },
		"p_end_date_sk":     func(r *rowCtx, h uint64) val { return ival(start(r) + between(h, 30, 60)) },
		"p_item_sk":         func(r *rowCtx, h uint64) val { return ival(between(h, 1, r.g.nItem)) },
		"p_cost":            constDec(100000),
		"p_response_target": constI(1),
		"p_promo_name":      func(_ *rowCtx, h uint64) val { return sval(word(syllables, intn(h, 10))) },
		"p_channel_dmail":   yesNo(0.5),
		"p_channel_email":   yesNo(0.5),
		"p_channel_catalog": yesNo(0.5),
		"p_channel_tv":      yesNo(0.5),
		"p_channel_radio":   yesNo(0.5),
		"p_channel_press":   yesNo(0.5),
		"p_channel_event":   yesNo(0.5),
		"p_channel_demo":    yesNo(0.5),
		"p_channel_details": textCol(4, 12),
		"p_purpose":         pickS(promoPurposes),
		"p_discount_active": yesNo(0.5),
	}
}

func constDec(cents int64) colFn { return func(*rowCtx, uint64) val { return dval(cents) } }

// customerCurrent returns a customer's c_current_cdemo_sk, hdemo and addr
// keys (before NULL injection), computed exactly as the customer columns.
func (g *Generator) customerCurrent(cust int64) (cdemo, hdemo, addr int64) {
	base := rowBase(g.cfg.Seed, customerTableID, cust-1)
	h := func(col string) uint64 { return cellHash(base, colSalt(col)) }
	return between(h("c_current_cdemo_sk"), 1, g.nCDemo), between(h("c_current_hdemo_sk"), 1, g.nHDemo),
		between(h("c_current_addr_sk"), 1, g.nAddress)
}
