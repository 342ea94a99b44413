package sql

// Materialized tables (Flink 2.2's syntax; SET FRESHNESS is flightd's).

func (p *parser) parseCreateMaterialized(pos Pos, orAlter bool) Statement {
	m := &CreateMaterializedTable{Pos: pos, OrAlter: orAlter, IfNotExists: p.ifNotExists(), Name: p.name("table name")}
	if orAlter && m.IfNotExists {
		p.failf(pos, "CREATE OR ALTER MATERIALIZED TABLE cannot have IF NOT EXISTS")
	}
	if p.acceptP("(") {
		m.Columns, m.PrimaryKey, m.PrimaryKeyPos, m.Watermark = p.tableElements()
	}
	m.Comment, m.PartitionedBy, m.With = p.tableTail()
	if p.acceptK("freshness") {
		m.Freshness = p.freshness()
	}
	if p.acceptK("refresh_mode") {
		p.expectP("=")
		switch {
		case p.acceptK("full"):
			m.RefreshMode = "FULL"
		case p.acceptK("continuous"):
			m.RefreshMode = "CONTINUOUS"
		default:
			p.failf(p.peek().pos, "expected FULL or CONTINUOUS after REFRESH_MODE =, found %s", p.describe(p.peek()))
		}
	}
	p.expectK("as")
	m.As = p.parseQuery()
	return m
}

// freshness parses "= INTERVAL 'n' unit" after FRESHNESS.
func (p *parser) freshness() *IntervalLiteral {
	p.expectP("=")
	if !p.isK("interval") {
		p.failf(p.peek().pos, "expected INTERVAL after FRESHNESS =, found %s", p.describe(p.peek()))
	}
	return p.interval()
}

func (p *parser) parseAlterMaterialized(pos Pos) Statement {
	a := &AlterMaterializedTable{Pos: pos, Name: p.name("table name")}
	switch {
	case p.acceptK("suspend"):
		a.Action = "SUSPEND"
	case p.acceptK("resume"):
		a.Action = "RESUME"
		if p.acceptK("with") {
			a.With = p.properties()
		}
	case p.acceptK("refresh"):
		a.Action = "REFRESH"
		if p.acceptK("partition") {
			a.Partition = p.partitionSpec()
		}
	case p.acceptK("set", "freshness"):
		a.Action = "SET FRESHNESS"
		a.Freshness = p.freshness()
	case p.acceptK("as"):
		a.Action = "AS"
		a.As = p.parseQuery()
	default:
		p.failf(p.peek().pos, "expected SUSPEND, RESUME, REFRESH, SET FRESHNESS or AS after ALTER MATERIALIZED TABLE name, found %s", p.describe(p.peek()))
	}
	return a
}

func (f *formatter) createMaterialized(n *CreateMaterializedTable) {
	f.w("CREATE ")
	if n.OrAlter {
		f.w("OR ALTER ")
	}
	f.w("MATERIALIZED TABLE ")
	if n.IfNotExists {
		f.w("IF NOT EXISTS ")
	}
	f.parts(n.Name.Parts)
	f.tableElements(n.Columns, n.PrimaryKey, n.Watermark)
	f.tableTail(n.Comment, n.PartitionedBy, n.With)
	if n.Freshness != nil {
		f.w(" FRESHNESS = ")
		f.node(n.Freshness)
	}
	if n.RefreshMode != "" {
		f.w(" REFRESH_MODE = ", n.RefreshMode)
	}
	f.w(" AS ")
	f.node(n.As)
}

func (f *formatter) alterMaterialized(n *AlterMaterializedTable) {
	f.w("ALTER MATERIALIZED TABLE ")
	f.parts(n.Name.Parts)
	f.w(" ", n.Action)
	switch {
	case n.With != nil:
		f.w(" WITH ")
		f.props(n.With)
	case n.Partition != nil:
		f.partitionSpec(n.Partition)
	case n.Freshness != nil:
		f.w(" = ")
		f.node(n.Freshness)
	case n.As != nil:
		f.w(" ")
		f.node(n.As)
	}
}
