package plan

import (
	"fmt"
	"strings"
)

// explainTree renders a logical plan.
func explainTree(sb *strings.Builder, n Node, depth int) {
	sb.WriteString(strings.Repeat("  ", depth))
	sb.WriteString(explainLine(n))
	fmt.Fprintf(sb, " (rows=%s)\n", fmtRows(n.Rows()))
	for _, c := range n.Inputs() {
		explainTree(sb, c, depth+1)
	}
}

// explainPhysical renders a physical plan (EXPLAIN).
func explainPhysical(sb *strings.Builder, n PhysicalNode, depth int) {
	sb.WriteString(strings.Repeat("  ", depth))
	sb.WriteString(physicalLine(n))
	fmt.Fprintf(sb, " (rows=%s)\n", fmtRows(n.Rows()))
	for _, c := range n.Children() {
		explainPhysical(sb, c, depth+1)
	}
}

// physicalLine names a physical node's algorithm and what it computes.
func physicalLine(n PhysicalNode) string {
	switch n := n.(type) {
	case *TableScan:
		s := explainLine(n.Scan)
		if len(n.Ranges) > 0 {
			var cols []string
			for _, r := range n.Ranges {
				cols = append(cols, r.Column)
			}
			s += " join ranges: " + strings.Join(cols, ", ")
		}
		return s
	case *HashJoin:
		s := "Hash" + explainLine(n.Join)
		if n.KeepOrder {
			s += " (left order kept)"
		}
		return s
	case *MergeJoin:
		s := "Merge" + explainLine(n.Join)
		if n.Buckets > 1 {
			s += fmt.Sprintf(" (bucket by bucket, %d buckets)", n.Buckets)
		}
		return s
	case *NestedLoopJoin:
		return "NestedLoop" + explainLine(n.Join)
	case *HashAggregate:
		return "Hash" + explainLine(n.Agg)
	case *SortAggregate:
		return "Sort" + explainLine(n.Agg)
	case *ParallelHashAggregate:
		return "ParallelHash" + explainLine(n.Agg)
	case *TopN:
		s := "TopN " + n.Limit.Count.String()
		if n.Limit.Offset != nil {
			s += " offset " + n.Limit.Offset.String()
		}
		return s + " by " + sortKeysString(n.Sort.Keys)
	case *Gather:
		return "Gather"
	case *LookupJoin:
		keys := make([]string, len(n.Keys))
		for i, k := range n.Keys {
			keys[i] = n.Scan.Table.PrimaryKey()[i] + " = " + k.String()
		}
		s := fmt.Sprintf("LookupJoin %s %s [%s] keys: %s", n.Join.Kind, n.Scan.Label, strings.Join(n.Scan.Names, ", "), strings.Join(keys, " AND "))
		if n.Residual != nil {
			s += " residual: " + n.Residual.String()
		}
		return s
	case *LookupScan:
		keys := make([]string, len(n.Values))
		for i, vals := range n.Values {
			keys[i] = n.Scan.Table.PrimaryKey()[i] + " IN (" + exprList(vals) + ")"
			if len(vals) == 1 {
				keys[i] = n.Scan.Table.PrimaryKey()[i] + " = " + vals[0].String()
			}
		}
		s := fmt.Sprintf("LookupScan %s [%s] keys: %s", n.Scan.Label, strings.Join(n.Scan.Names, ", "), strings.Join(keys, " AND "))
		if !n.Exact {
			s += " filter: " + n.Scan.Filter.String()
		}
		return s
	}
	return explainLine(n.Logical())
}

func fmtRows(r float64) string {
	switch {
	case r >= 1e9:
		return fmt.Sprintf("%.1fG", r/1e9)
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

func colNames(cols []Column) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = c.Name
	}
	return strings.Join(s, ", ")
}

func sortKeysString(keys []SortKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.Expr.String()
		if k.Desc {
			s[i] += " DESC"
		}
		if k.NullsFirst != defaultNullsFirst(k.Desc) {
			if k.NullsFirst {
				s[i] += " NULLS FIRST"
			} else {
				s[i] += " NULLS LAST"
			}
		}
	}
	return strings.Join(s, ", ")
}

func explainLine(n Node) string {
	switch n := n.(type) {
	case *CTEScanNode:
		return "CTEScan " + n.Shared.Name
	case *ScanNode:
		s := fmt.Sprintf("Scan %s [%s]", n.Label, strings.Join(n.Names, ", "))
		if n.Stream != nil {
			s = "Stream" + s[len("Scan"):] + " from " + n.Stream.Start.String()
		}
		if n.Read != ReadRows {
			s += " (" + n.Read.String() + ")"
		}
		if n.Pushed != nil || len(n.ParamPushed) > 0 {
			var pushed []string
			if n.Pushed != nil {
				pushed = append(pushed, n.Pushed.String())
			}
			for _, p := range n.ParamPushed {
				pushed = append(pushed, p.String())
			}
			s += " pushed: " + strings.Join(pushed, " AND ")
		}
		if n.Filter != nil {
			s += " filter: " + n.Filter.String()
		}
		return s
	case *ValuesNode:
		return fmt.Sprintf("Values %d rows [%s]", len(n.Values), colNames(n.Cols))
	case *FileScanNode:
		return n.explain()
	case *SeriesNode:
		return n.explain()
	case *FilterNode:
		return "Filter " + n.Pred.String()
	case *ProjectNode:
		s := make([]string, len(n.Exprs))
		for i, e := range n.Exprs {
			s[i] = e.String()
			if c, ok := e.(*ColRef); !ok || c.Name != n.Cols[i].Name {
				s[i] += " AS " + n.Cols[i].Name
			}
		}
		return "Project " + strings.Join(s, ", ")
	case *JoinNode:
		s := "Join " + n.Kind.String()
		if len(n.LeftKeys) > 0 {
			k := make([]string, len(n.LeftKeys))
			for i := range n.LeftKeys {
				k[i] = n.LeftKeys[i].String() + " = " + n.RightKeys[i].String()
			}
			s += " keys: " + strings.Join(k, ", ")
			if n.Residual != nil {
				s += " residual: " + n.Residual.String()
			}
		} else if n.Cond != nil {
			s += " on: " + n.Cond.String()
		}
		return s
	case *AggNode:
		s := "Aggregate"
		if len(n.Groups) > 0 {
			s += " group: " + exprList(n.Groups)
		}
		if n.Sets != nil {
			s += fmt.Sprintf(" sets: %v", n.Sets)
		}
		if len(n.Aggs) > 0 {
			a := make([]string, len(n.Aggs))
			for i, ag := range n.Aggs {
				a[i] = aggString(ag)
			}
			s += " aggs: " + strings.Join(a, ", ")
		}
		return s
	case *SortNode:
		return "Sort " + sortKeysString(n.Keys)
	case *LimitNode:
		s := "Limit"
		if n.Count != nil {
			s += " " + n.Count.String()
		}
		if n.Offset != nil {
			s += " offset " + n.Offset.String()
		}
		return s
	case *DistinctNode:
		if n.Partial {
			return "Distinct partial"
		}
		return "Distinct"
	case *SetOpNode:
		s := titleCase(n.Kind.String())
		if n.All {
			s += " all"
		}
		return s
	case *WindowNode:
		f := make([]string, len(n.Funcs))
		for i, w := range n.Funcs {
			f[i] = w.Fn + "(" + exprList(w.Args) + ") AS " + w.Col.Name
		}
		s := "Window " + strings.Join(f, ", ")
		if len(n.PartitionBy) > 0 {
			s += " partition: " + exprList(n.PartitionBy)
		}
		if len(n.OrderBy) > 0 {
			s += " order: " + sortKeysString(n.OrderBy)
		}
		return s
	case *UnnestNode:
		return n.String()
	case *Max1RowNode:
		if n.PerKeyCount != nil {
			return "Max1RowPerKey " + n.PerKeyCount.Name
		}
		return "Max1Row"
	}
	return fmt.Sprintf("%T", n)
}

func aggString(a AggCall) string {
	s := a.Fn + "("
	if a.Distinct {
		s += "DISTINCT "
	}
	if a.Fn == "count_star" {
		s = "count(*"
	} else {
		s += exprList(a.Args)
	}
	s += ")"
	if a.Filter != nil {
		s += " FILTER (WHERE " + a.Filter.String() + ")"
	}
	return s + " AS " + a.Col.Name
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
