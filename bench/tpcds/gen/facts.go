package gen

import (
	"math"
	"sort"
)

// Channels of the sales facts.
const (
	chStore = iota
	chCatalog
	chWeb
)

type channel struct {
	sales, returns string
	salesID        uint64 // tableDef id of the sales table (its hash domain)
	linesLo        int64  // lines per order
	linesHi        int64
}

var channels = [...]channel{
	chStore:   {"store_sales", "store_returns", 20, 8, 16},
	chCatalog: {"catalog_sales", "catalog_returns", 21, 4, 14},
	chWeb:     {"web_sales", "web_returns", 22, 8, 16},
}

// orderBlock is the number of orders whose line counts are summed into one
// prefix-sum entry of an orderIndex.
const orderBlock = 64

// orderIndex maps line numbers to orders. Orders have a random number of
// lines; the prefix sums per block of orders let any line be located
// without generating the lines before it. The last order is cut so that
// the total is exactly the table's row count.
type orderIndex struct {
	blockStart []int64 // first line of each block of orderBlock orders
}

func (g *Generator) linesOf(ch int, order int64) int64 {
	c := channels[ch]
	return between(hash4(g.cfg.Seed, c.salesID, uint64(order), saltLines), c.linesLo, c.linesHi)
}

func (g *Generator) orders(ch int) *orderIndex {
	name := channels[ch].sales
	if v, ok := g.ordersOnce.Load(name); ok {
		return v.(*orderIndex)
	}
	total := factRows(name, g.cfg.Scale)
	idx := &orderIndex{}
	var line int64
	for o := int64(0); line < total; o++ {
		if o%orderBlock == 0 {
			idx.blockStart = append(idx.blockStart, line)
		}
		line += g.linesOf(ch, o)
	}
	v, _ := g.ordersOnce.LoadOrStore(name, idx)
	return v.(*orderIndex)
}

// orderCursor remembers the order of the previous row, so that sequential
// rows cost O(1) to locate.
type orderCursor struct {
	ch           int
	valid        bool
	order, start int64
	lines        int64
}

// locate sets the cursor to the order holding line.
func (r *rowCtx) locate(ch int, line int64) {
	c := &r.cur
	if c.valid && c.ch == ch {
		if line >= c.start && line < c.start+c.lines {
			return
		}
		if line == c.start+c.lines {
			c.order++
			c.start = line
			c.lines = r.g.linesOf(ch, c.order)
			return
		}
	}
	idx := r.g.orders(ch)
	b := sort.Search(len(idx.blockStart), func(i int) bool { return idx.blockStart[i] > line }) - 1
	o, start := int64(b)*orderBlock, idx.blockStart[b]
	for {
		n := r.g.linesOf(ch, o)
		if line < start+n {
			*c = orderCursor{ch: ch, valid: true, order: o, start: start, lines: n}
			return
		}
		start += n
		o++
	}
}

// saleLine is one line of a sales fact, in the columns' terms.
type saleLine struct {
	order, lineNo                         int64
	soldDate, soldTime, shipDate          int64
	billCustomer, billCDemo, billHDemo    int64
	billAddr                              int64
	shipCustomer, shipCDemo, shipHDemo    int64
	shipAddr                              int64
	store, callCenter, catalogPage        int64
	webPage, webSite, shipMode, warehouse int64
	item, promo, quantity                 int64
	wholesale, list, sales                int64 // unit prices in cents
	extDiscount, extSales, extWholesale   int64
	extList, extTax, coupon, extShip      int64
	netPaid, netPaidTax, netPaidShip      int64
	netPaidShipTax, netProfit             int64
	taxRate                               float64
}

// saleDate draws a sale date with a year-end peak, as retail data has.
func saleDate(h uint64) int64 {
	if h%10 < 3 {
		y := between(h>>4, 1998, 2002)
		return between(h>>20, julian(y, 11, 1), julian(y, 12, 31))
	}
	return between(h>>4, salesFirst, salesLast)
}

// makeSale computes line `line` of channel ch.
func (r *rowCtx) makeSale(ch int, line int64) {
	r.locate(ch, line)
	g, c := r.g, channels[ch]
	o := r.cur.order
	oh := func(salt uint64) uint64 { return hash4(g.cfg.Seed, c.salesID|2<<32, uint64(o), salt) }
	lh := func(salt uint64) uint64 { return hash4(g.cfg.Seed, c.salesID|3<<32, uint64(line), salt) }
	s := &r.sale
	*s = saleLine{order: o + 1, lineNo: line - r.cur.start}
	s.soldDate = saleDate(oh(saltDate))
	s.soldTime = intn(oh(saltTime), 86400)
	// Half of the orders come from the regulars (the first fifth of the
	// customers), and most orders carry the customer's current demographics
	// and address.
	ch0 := oh(saltCustomer)
	if ch0&1 == 0 {
		s.billCustomer = 1 + intn(ch0>>1, max(g.nCustomer/5, 1))
	} else {
		s.billCustomer = 1 + intn(ch0>>1, g.nCustomer)
	}
	if oh(saltCDemo)%5 != 0 {
		s.billCDemo, s.billHDemo, s.billAddr = g.customerCurrent(s.billCustomer)
	} else {
		s.billCDemo = between(oh(saltCDemo)>>8, 1, g.nCDemo)
		s.billHDemo = between(oh(saltHDemo), 1, g.nHDemo)
		s.billAddr = between(oh(saltAddrKey), 1, g.nAddress)
	}
	s.shipCustomer, s.shipCDemo, s.shipHDemo, s.shipAddr = s.billCustomer, s.billCDemo, s.billHDemo, s.billAddr
	if oh(saltShip)%10 == 0 { // a gift: shipped to someone else
		sh := stream{oh(saltShip + 100)}
		s.shipCustomer = between(sh.next(), 1, g.nCustomer)
		s.shipCDemo = between(sh.next(), 1, g.nCDemo)
		s.shipHDemo = between(sh.next(), 1, g.nHDemo)
		s.shipAddr = between(sh.next(), 1, g.nAddress)
	}
	s.shipDate = s.soldDate + between(oh(saltShip+1), 2, 150)
	s.store = between(oh(saltOrder), 1, g.nStore)
	s.callCenter = between(oh(saltOrder+1), 1, g.nCallCenter)
	s.webSite = between(oh(saltOrder+2), 1, g.nWebSite)

	ls := stream{lh(saltItem)}
	// Item popularity is skewed like customers, so that some items sell
	// several times a day (q23's "frequent" items) in every channel.
	base := int64(float64(g.nItem) * math.Pow(unit(oh(saltItem)), 2))
	s.item = (base+s.lineNo*g.itemStep)%g.nItem + 1
	s.catalogPage = between(ls.next(), 1, g.nCatalogPage)
	s.webPage = between(ls.next(), 1, g.nWebPage)
	s.shipMode = between(ls.next(), 1, g.nShipMode)
	s.warehouse = between(ls.next(), 1, g.nWarehouse)
	s.promo = between(ls.next(), 1, g.nPromotion)

	// Pricing as in the specification: list = wholesale * (1 + markup),
	// sales = list * (1 - discount), then the extended amounts.
	ps := stream{lh(saltPrice)}
	s.quantity = between(ps.next(), 1, 100)
	s.wholesale = between(ps.next(), 100, 10000)
	s.list = pct(s.wholesale, 1+2*unit(ps.next()))
	s.sales = pct(s.list, 1-unit(ps.next()))
	q := s.quantity
	s.extDiscount = (s.list - s.sales) * q
	s.extSales = s.sales * q
	s.extWholesale = s.wholesale * q
	s.extList = s.list * q
	s.taxRate = float64(between(ps.next(), 0, 9)) / 100
	s.extTax = pct(s.extSales, s.taxRate)
	if ps.next()%5 == 0 {
		s.coupon = pct(s.extSales, unit(ps.next()))
	}
	s.netPaid = s.extSales - s.coupon
	s.netPaidTax = s.netPaid + s.extTax
	if ch != chStore {
		s.extShip = pct(s.extList, 0.5*unit(ps.next()))
	}
	s.netPaidShip = s.netPaid + s.extShip
	s.netPaidShipTax = s.netPaidShip + s.extTax
	s.netProfit = s.netPaid - s.extWholesale
}

func salesRows(ch int) func(*Generator) int64 {
	return func(g *Generator) int64 { return factRows(channels[ch].sales, g.cfg.Scale) }
}

// returnLine is one return, computed from the sales line it returns.
type returnLine struct {
	date, time                            int64
	customer, cdemo, hdemo, addr          int64
	reason, quantity                      int64
	amount, tax, amountTax, fee, shipCost int64
	cash, reversed, credit, netLoss       int64
}

// returnedLine maps return row j to the sales line it returns: strictly
// increasing, so no line is returned twice.
func (r *rowCtx) returnedLine(ch int, j int64) int64 {
	g := r.g
	sales := factRows(channels[ch].sales, g.cfg.Scale)
	rets := factRows(channels[ch].returns, g.cfg.Scale)
	step := max(sales/rets, 1)
	return min(j*sales/rets+intn(r.h(saltReturn), step), sales-1)
}

func (r *rowCtx) makeReturn(ch int) {
	r.makeSale(ch, r.returnedLine(ch, r.row))
	s, g := &r.sale, r.g
	rs := stream{r.h(saltReturn + 1)}
	t := &r.ret
	*t = returnLine{}
	t.date = s.soldDate + between(rs.next(), 1, 180)
	t.time = intn(rs.next(), 86400)
	t.customer, t.cdemo, t.hdemo, t.addr = s.shipCustomer, s.shipCDemo, s.shipHDemo, s.shipAddr
	if rs.next()%10 == 0 {
		t.customer = between(rs.next(), 1, g.nCustomer)
	}
	t.reason = between(rs.next(), 1, g.nReason)
	t.quantity = between(rs.next(), 1, s.quantity)
	t.amount = s.sales * t.quantity
	t.tax = pct(t.amount, s.taxRate)
	t.amountTax = t.amount + t.tax
	t.fee = between(rs.next(), 50, 10000)
	t.shipCost = pct(s.list*t.quantity, 0.5*unit(rs.next()))
	t.cash = pct(t.amount, unit(rs.next()))
	t.reversed = pct(t.amount-t.cash, unit(rs.next()))
	t.credit = t.amount - t.cash - t.reversed
	t.netLoss = t.fee + t.shipCost + pct(t.amount, 0.1*unit(rs.next()))
}

func returnRows(ch int) func(*Generator) int64 {
	return func(g *Generator) int64 { return factRows(channels[ch].returns, g.cfg.Scale) }
}

// Column helpers reading the sale or return line.
func sf(f func(s *saleLine) int64) colFn {
	return func(r *rowCtx, _ uint64) val { return ival(f(&r.sale)) }
}
func sd(f func(s *saleLine) int64) colFn {
	return func(r *rowCtx, _ uint64) val { return dval(f(&r.sale)) }
}
func rf(f func(t *returnLine) int64) colFn {
	return func(r *rowCtx, _ uint64) val { return ival(f(&r.ret)) }
}
func rd(f func(t *returnLine) int64) colFn {
	return func(r *rowCtx, _ uint64) val { return dval(f(&r.ret)) }
}

// pricingCols are the quantity and money columns every sales table has.
func pricingCols(c map[string]colFn, p string, ship bool) {
	c[p+"quantity"] = sf(func(s *saleLine) int64 { return s.quantity })
	c[p+"wholesale_cost"] = sd(func(s *saleLine) int64 { return s.wholesale })
	c[p+"list_price"] = sd(func(s *saleLine) int64 { return s.list })
	c[p+"sales_price"] = sd(func(s *saleLine) int64 { return s.sales })
	c[p+"ext_discount_amt"] = sd(func(s *saleLine) int64 { return s.extDiscount })
	c[p+"ext_sales_price"] = sd(func(s *saleLine) int64 { return s.extSales })
	c[p+"ext_wholesale_cost"] = sd(func(s *saleLine) int64 { return s.extWholesale })
	c[p+"ext_list_price"] = sd(func(s *saleLine) int64 { return s.extList })
	c[p+"ext_tax"] = sd(func(s *saleLine) int64 { return s.extTax })
	c[p+"coupon_amt"] = sd(func(s *saleLine) int64 { return s.coupon })
	c[p+"net_paid"] = sd(func(s *saleLine) int64 { return s.netPaid })
	c[p+"net_paid_inc_tax"] = sd(func(s *saleLine) int64 { return s.netPaidTax })
	c[p+"net_profit"] = sd(func(s *saleLine) int64 { return s.netProfit })
	if ship {
		c[p+"ext_ship_cost"] = sd(func(s *saleLine) int64 { return s.extShip })
		c[p+"net_paid_inc_ship"] = sd(func(s *saleLine) int64 { return s.netPaidShip })
		c[p+"net_paid_inc_ship_tax"] = sd(func(s *saleLine) int64 { return s.netPaidShipTax })
	}
}

// returnAmountCols are the money columns every returns table has.
func returnAmountCols(c map[string]colFn, p, amount, credit string) {
	c[p+"return_quantity"] = rf(func(t *returnLine) int64 { return t.quantity })
	c[p+amount] = rd(func(t *returnLine) int64 { return t.amount })
	c[p+"return_tax"] = rd(func(t *returnLine) int64 { return t.tax })
	c[p+"return_amt_inc_tax"] = rd(func(t *returnLine) int64 { return t.amountTax })
	c[p+"fee"] = rd(func(t *returnLine) int64 { return t.fee })
	c[p+"return_ship_cost"] = rd(func(t *returnLine) int64 { return t.shipCost })
	c[p+"refunded_cash"] = rd(func(t *returnLine) int64 { return t.cash })
	c[p+"reversed_charge"] = rd(func(t *returnLine) int64 { return t.reversed })
	c[p+credit] = rd(func(t *returnLine) int64 { return t.credit })
	c[p+"net_loss"] = rd(func(t *returnLine) int64 { return t.netLoss })
}

func registerFacts() {
	ss := map[string]colFn{
		"ss_sold_date_sk":  sf(func(s *saleLine) int64 { return s.soldDate }),
		"ss_sold_time_sk":  sf(func(s *saleLine) int64 { return s.soldTime }),
		"ss_item_sk":       sf(func(s *saleLine) int64 { return s.item }),
		"ss_customer_sk":   sf(func(s *saleLine) int64 { return s.billCustomer }),
		"ss_cdemo_sk":      sf(func(s *saleLine) int64 { return s.billCDemo }),
		"ss_hdemo_sk":      sf(func(s *saleLine) int64 { return s.billHDemo }),
		"ss_addr_sk":       sf(func(s *saleLine) int64 { return s.billAddr }),
		"ss_store_sk":      sf(func(s *saleLine) int64 { return s.store }),
		"ss_promo_sk":      sf(func(s *saleLine) int64 { return s.promo }),
		"ss_ticket_number": sf(func(s *saleLine) int64 { return s.order }),
	}
	pricingCols(ss, "ss_", false)
	register("store_sales", &tableDef{id: channels[chStore].salesID, nullBP: 900, rows: salesRows(chStore),
		prepare: func(r *rowCtx) { r.makeSale(chStore, r.row) }, cols: ss})

	orderCols := func(p string) map[string]colFn {
		c := map[string]colFn{
			p + "sold_date_sk":     sf(func(s *saleLine) int64 { return s.soldDate }),
			p + "sold_time_sk":     sf(func(s *saleLine) int64 { return s.soldTime }),
			p + "ship_date_sk":     sf(func(s *saleLine) int64 { return s.shipDate }),
			p + "bill_customer_sk": sf(func(s *saleLine) int64 { return s.billCustomer }),
			p + "bill_cdemo_sk":    sf(func(s *saleLine) int64 { return s.billCDemo }),
			p + "bill_hdemo_sk":    sf(func(s *saleLine) int64 { return s.billHDemo }),
			p + "bill_addr_sk":     sf(func(s *saleLine) int64 { return s.billAddr }),
			p + "ship_customer_sk": sf(func(s *saleLine) int64 { return s.shipCustomer }),
			p + "ship_cdemo_sk":    sf(func(s *saleLine) int64 { return s.shipCDemo }),
			p + "ship_hdemo_sk":    sf(func(s *saleLine) int64 { return s.shipHDemo }),
			p + "ship_addr_sk":     sf(func(s *saleLine) int64 { return s.shipAddr }),
			p + "ship_mode_sk":     sf(func(s *saleLine) int64 { return s.shipMode }),
			p + "warehouse_sk":     sf(func(s *saleLine) int64 { return s.warehouse }),
			p + "item_sk":          sf(func(s *saleLine) int64 { return s.item }),
			p + "promo_sk":         sf(func(s *saleLine) int64 { return s.promo }),
			p + "order_number":     sf(func(s *saleLine) int64 { return s.order }),
		}
		pricingCols(c, p, true)
		return c
	}
	cs := orderCols("cs_")
	cs["cs_call_center_sk"] = sf(func(s *saleLine) int64 { return s.callCenter })
	cs["cs_catalog_page_sk"] = sf(func(s *saleLine) int64 { return s.catalogPage })
	register("catalog_sales", &tableDef{id: channels[chCatalog].salesID, nullBP: 100, rows: salesRows(chCatalog),
		prepare: func(r *rowCtx) { r.makeSale(chCatalog, r.row) }, cols: cs})
	ws := orderCols("ws_")
	ws["ws_web_page_sk"] = sf(func(s *saleLine) int64 { return s.webPage })
	ws["ws_web_site_sk"] = sf(func(s *saleLine) int64 { return s.webSite })
	register("web_sales", &tableDef{id: channels[chWeb].salesID, nullBP: 100, rows: salesRows(chWeb),
		prepare: func(r *rowCtx) { r.makeSale(chWeb, r.row) }, cols: ws})

	sr := map[string]colFn{
		"sr_returned_date_sk": rf(func(t *returnLine) int64 { return t.date }),
		"sr_return_time_sk":   rf(func(t *returnLine) int64 { return t.time }),
		"sr_item_sk":          sf(func(s *saleLine) int64 { return s.item }),
		"sr_customer_sk":      rf(func(t *returnLine) int64 { return t.customer }),
		"sr_cdemo_sk":         rf(func(t *returnLine) int64 { return t.cdemo }),
		"sr_hdemo_sk":         rf(func(t *returnLine) int64 { return t.hdemo }),
		"sr_addr_sk":          rf(func(t *returnLine) int64 { return t.addr }),
		"sr_store_sk":         sf(func(s *saleLine) int64 { return s.store }),
		"sr_reason_sk":        rf(func(t *returnLine) int64 { return t.reason }),
		"sr_ticket_number":    sf(func(s *saleLine) int64 { return s.order }),
	}
	returnAmountCols(sr, "sr_", "return_amt", "store_credit")
	register("store_returns", &tableDef{id: 23, nullBP: 700, rows: returnRows(chStore),
		prepare: func(r *rowCtx) { r.makeReturn(chStore) }, cols: sr})

	retCols := func(p string) map[string]colFn {
		return map[string]colFn{
			p + "returned_date_sk":      rf(func(t *returnLine) int64 { return t.date }),
			p + "returned_time_sk":      rf(func(t *returnLine) int64 { return t.time }),
			p + "item_sk":               sf(func(s *saleLine) int64 { return s.item }),
			p + "refunded_customer_sk":  sf(func(s *saleLine) int64 { return s.billCustomer }),
			p + "refunded_cdemo_sk":     sf(func(s *saleLine) int64 { return s.billCDemo }),
			p + "refunded_hdemo_sk":     sf(func(s *saleLine) int64 { return s.billHDemo }),
			p + "refunded_addr_sk":      sf(func(s *saleLine) int64 { return s.billAddr }),
			p + "returning_customer_sk": rf(func(t *returnLine) int64 { return t.customer }),
			p + "returning_cdemo_sk":    rf(func(t *returnLine) int64 { return t.cdemo }),
			p + "returning_hdemo_sk":    rf(func(t *returnLine) int64 { return t.hdemo }),
			p + "returning_addr_sk":     rf(func(t *returnLine) int64 { return t.addr }),
			p + "reason_sk":             rf(func(t *returnLine) int64 { return t.reason }),
			p + "order_number":          sf(func(s *saleLine) int64 { return s.order }),
		}
	}
	cr := retCols("cr_")
	cr["cr_call_center_sk"] = sf(func(s *saleLine) int64 { return s.callCenter })
	cr["cr_catalog_page_sk"] = sf(func(s *saleLine) int64 { return s.catalogPage })
	cr["cr_ship_mode_sk"] = sf(func(s *saleLine) int64 { return s.shipMode })
	cr["cr_warehouse_sk"] = sf(func(s *saleLine) int64 { return s.warehouse })
	returnAmountCols(cr, "cr_", "return_amount", "store_credit")
	register("catalog_returns", &tableDef{id: 24, nullBP: 400, rows: returnRows(chCatalog),
		prepare: func(r *rowCtx) { r.makeReturn(chCatalog) }, cols: cr})
	wr := retCols("wr_")
	wr["wr_web_page_sk"] = sf(func(s *saleLine) int64 { return s.webPage })
	returnAmountCols(wr, "wr_", "return_amt", "account_credit")
	register("web_returns", &tableDef{id: 25, nullBP: 900, rows: returnRows(chWeb),
		prepare: func(r *rowCtx) { r.makeReturn(chWeb) }, cols: wr})

	register("inventory", &tableDef{id: 26, nullBP: 1000, rows: func(g *Generator) int64 {
		return g.nItemIDs * g.nWarehouse * inventoryWeeks
	}, cols: map[string]colFn{
		"inv_date_sk": func(r *rowCtx, _ uint64) val {
			return ival(invFirst + 7*(r.row/(r.g.nItemIDs*r.g.nWarehouse)))
		},
		"inv_item_sk": func(r *rowCtx, _ uint64) val {
			return ival(currentItemSK(r.row%(r.g.nItemIDs*r.g.nWarehouse)/r.g.nWarehouse, r.g.nItem))
		},
		"inv_warehouse_sk":     func(r *rowCtx, _ uint64) val { return ival(r.row%r.g.nWarehouse + 1) },
		"inv_quantity_on_hand": rangeI(0, 1000),
	}})
}

// currentItemSK returns the surrogate key of the newest version of item
// business key bk (0-based) among n item rows.
func currentItemSK(bk, n int64) int64 {
	blk := bk / 3
	row := blk*6 + []int64{0, 2, 5}[bk%3]
	return min(row, n-1) + 1
}
