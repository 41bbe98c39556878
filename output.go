package harvest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// unencodableOutput is the error type of an output that JSON cannot
// encode (NaN, ±Inf, a channel, a func, …). It is not retryable: the same
// code would produce the same value.
const unencodableOutput = "unencodable_output"

// encodeOutput encodes the output of the workflow or activity name (kind
// "workflow" or "activity"). A value JSON cannot encode is a non-retryable
// *ApplicationError naming the definition and the value's place, e.g.
// `activity "charge": output.amount: json: unsupported value: NaN`.
func encodeOutput(kind, name string, v any) (json.RawMessage, error) {
	raw, err := encodeValue(v)
	if err == nil {
		return raw, nil
	}
	msg := fmt.Sprintf("%s %q: %s: %v", kind, name, badPath(reflect.ValueOf(v), "output"), err)
	return nil, NewNonRetryableError(unencodableOutput, msg)
}

// badPath descends into v, which does not encode, along the first
// sub-value (struct field, map entry or element) that does not encode
// either, and returns its path below path.
func badPath(v reflect.Value, path string) string {
	if !v.IsValid() || v.Type().Implements(marshalerType) {
		return path
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return path
		}
		return badPath(v.Elem(), path)
	case reflect.Struct:
		return badField(v, path)
	case reflect.Map:
		return badEntry(v, path)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if !encodes(v.Index(i)) {
				return badPath(v.Index(i), path+"["+strconv.Itoa(i)+"]")
			}
		}
	}
	return path
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// badField is badPath for a struct: fields are named as JSON names them.
func badField(v reflect.Value, path string) string {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || encodes(v.Field(i)) {
			continue
		}
		return badPath(v.Field(i), path+"."+cmpOr(name, f.Name))
	}
	return path
}

// badEntry is badPath for a map, its keys visited in sorted order.
func badEntry(v reflect.Value, path string) string {
	keys := v.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		if !encodes(v.MapIndex(k)) {
			return badPath(v.MapIndex(k), path+"."+fmt.Sprint(k))
		}
	}
	return path
}

func encodes(v reflect.Value) bool {
	_, err := json.Marshal(v.Interface())
	return err == nil
}
