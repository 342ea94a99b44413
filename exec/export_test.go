package exec

// ProbedInParallel reports whether the hash join op has started parallel
// probe workers (for the tests of the exec_test package).
func ProbedInParallel(op Operator) bool {
	j, ok := op.(*joinOp)
	return ok && j.par != nil
}
