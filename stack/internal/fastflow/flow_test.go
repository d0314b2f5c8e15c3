package fastflow

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestFlowLayout holds the Flow to 256 bytes and its fields to the cache
// lines the doc comment assigns them, so that a receive touches lines 0–1
// and a send lines 0–3 only.
func TestFlowLayout(t *testing.T) {
	var f Flow
	if got := unsafe.Sizeof(f); got != 256 {
		t.Fatalf("Flow is %d bytes, want 256", got)
	}
	lines := []struct {
		name string
		off  uintptr
		size uintptr
		line uintptr
	}{
		{"rcvNxt", unsafe.Offsetof(f.rcvNxt), unsafe.Sizeof(f.rcvNxt), 0},
		{"sndUna", unsafe.Offsetof(f.sndUna), unsafe.Sizeof(f.sndUna), 0},
		{"predFlags", unsafe.Offsetof(f.predFlags), unsafe.Sizeof(f.predFlags), 0},
		{"flags", unsafe.Offsetof(f.flags), unsafe.Sizeof(f.flags), 0},
		{"sndEnd", unsafe.Offsetof(f.sndEnd), unsafe.Sizeof(f.sndEnd), 1},
		{"room", unsafe.Offsetof(f.room), unsafe.Sizeof(f.room), 1},
		{"fltLen", unsafe.Offsetof(f.fltLen), unsafe.Sizeof(f.fltLen), 1},
		{"hdr", unsafe.Offsetof(f.hdr), unsafe.Sizeof(f.hdr), 2},
		{"tcpSum", unsafe.Offsetof(f.tcpSum), unsafe.Sizeof(f.tcpSum), 2},
		{"inflight", unsafe.Offsetof(f.inflight), unsafe.Sizeof(f.inflight), 3},
	}
	for _, l := range lines {
		if l.off/64 != l.line || (l.off+l.size-1)/64 != l.line {
			t.Errorf("%s at bytes %d–%d, want within line %d", l.name, l.off, l.off+l.size-1, l.line)
		}
	}
}

// TestFlowPointerFree keeps pointers out of Flow, so that a []Flow is
// memory the garbage collector does not scan.
func TestFlowPointerFree(t *testing.T) {
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		switch ty.Kind() {
		case reflect.Struct:
			for i := 0; i < ty.NumField(); i++ {
				walk(ty.Field(i).Type, path+"."+ty.Field(i).Name)
			}
		case reflect.Array:
			walk(ty.Elem(), path+"[]")
		case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int,
			reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint, reflect.Uintptr:
		default:
			t.Errorf("%s is a %s, which the garbage collector scans", path, ty.Kind())
		}
	}
	walk(reflect.TypeOf(Flow{}), "Flow")
}
