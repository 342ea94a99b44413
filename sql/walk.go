package sql

import "reflect"

var nodeType = reflect.TypeOf((*Node)(nil)).Elem()

// Walk calls fn for node and, while fn returns true, for every node below
// it in source order. It walks struct fields by reflection so that new node
// types need no walker code.
func Walk(node Node, fn func(Node) bool) {
	if node == nil || reflect.ValueOf(node).IsNil() {
		return
	}
	if !fn(node) {
		return
	}
	walkValue(reflect.ValueOf(node).Elem(), fn)
}

func walkValue(v reflect.Value, fn func(Node) bool) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			walkValue(v.Field(i), fn)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkValue(v.Index(i), fn)
		}
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.Type().Implements(nodeType) {
			Walk(v.Interface().(Node), fn)
		}
	}
}
