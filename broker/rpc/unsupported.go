package rpc

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// unsupportedVersionCode is Kafka's UNSUPPORTED_VERSION.
const unsupportedVersionCode = 35

// errorResponse builds the answer Kafka gives a request it cannot serve
// (AbstractRequest.getErrorResponse): the request's response type, at the
// request's version, with code in the top-level error field and in every
// topic-partition the request named.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rv := reflect.ValueOf(resp).Elem()
	if f := rv.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
	mirrorTopics(reflect.ValueOf(req).Elem(), rv, code)
	return resp
}

// mirrorTopics copies the request's Topics[].Partitions[] shape into the
// response's, setting each partition's ErrorCode.
func mirrorTopics(req, resp reflect.Value, code int16) {
	rt, st := req.FieldByName("Topics"), resp.FieldByName("Topics")
	if !rt.IsValid() || !st.IsValid() || rt.Kind() != reflect.Slice || st.Kind() != reflect.Slice {
		return
	}
	out := reflect.MakeSlice(st.Type(), 0, rt.Len())
	for i := range rt.Len() {
		in := rt.Index(i)
		t := reflect.New(st.Type().Elem()).Elem()
		copyField(in, t, "Topic")
		rp, sp := in.FieldByName("Partitions"), t.FieldByName("Partitions")
		if rp.IsValid() && sp.IsValid() && rp.Kind() == reflect.Slice && sp.Kind() == reflect.Slice {
			parts := reflect.MakeSlice(sp.Type(), 0, rp.Len())
			for j := range rp.Len() {
				p := reflect.New(sp.Type().Elem()).Elem()
				src := rp.Index(j)
				if src.Kind() == reflect.Int32 { // a list of partition numbers
					if f := p.FieldByName("Partition"); f.IsValid() {
						f.SetInt(src.Int())
					}
				} else {
					copyField(src, p, "Partition")
				}
				if f := p.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
					f.SetInt(int64(code))
				}
				parts = reflect.Append(parts, p)
			}
			sp.Set(parts)
		}
		out = reflect.Append(out, t)
	}
	st.Set(out)
}

func copyField(from, to reflect.Value, name string) {
	f, t := from.FieldByName(name), to.FieldByName(name)
	if f.IsValid() && t.IsValid() && f.Type() == t.Type() {
		t.Set(f)
	}
}
