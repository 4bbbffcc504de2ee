// Command porcupine checks the Porcupine reference histories (etcd logs, kv) with
// github.com/anishathalye/porcupine and prints one line per file: path, verdict, seconds.
// Usage: go run . [-timeout 20s] <shared/histories dir>
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

type etcdInput struct {
	op   uint8 // 0 read, 1 write, 2 cas
	arg1 int
	arg2 int
}

type etcdOutput struct {
	ok      bool
	exists  bool
	value   int
	unknown bool
}

var etcdModel = porcupine.Model{
	Init: func() interface{} { return -1000000 }, // nil
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st := state.(int)
		in := input.(etcdInput)
		out := output.(etcdOutput)
		switch in.op {
		case 0:
			return out.unknown || (out.exists && out.value == st) || (!out.exists && st == -1000000), st
		case 1:
			return true, in.arg1
		default:
			ok := (in.arg1 == st && out.ok) || (in.arg1 != st && !out.ok) || out.unknown
			if in.arg1 == st {
				return ok, in.arg2
			}
			return ok, st
		}
	},
}

var etcdLine = regexp.MustCompile(`^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(\w+)\s+:(\w+)\s*(.*)$`)

func parseEtcd(path string) ([]porcupine.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []porcupine.Event
	pending := map[int]int{}
	id := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := etcdLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		proc, _ := strconv.Atoi(m[1])
		typ, fn, val := m[2], m[3], strings.TrimSpace(m[4])
		switch typ {
		case "invoke":
			in := etcdInput{}
			switch fn {
			case "write":
				in.op = 1
				in.arg1, _ = strconv.Atoi(val)
			case "cas":
				in.op = 2
				p := strings.Fields(strings.Trim(val, "[]"))
				in.arg1, _ = strconv.Atoi(p[0])
				in.arg2, _ = strconv.Atoi(p[1])
			}
			events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.CallEvent, Value: in, Id: id})
			pending[proc] = id
			id++
		case "ok", "fail":
			out := etcdOutput{ok: typ == "ok"}
			if typ == "fail" && fn != "cas" {
				out.unknown = true // :fail :read :timed-out: returns here with an unknown result
			}
			if fn == "read" {
				if val == "nil" {
					out.exists = false
				} else {
					out.exists = true
					out.value, _ = strconv.Atoi(val)
				}
			}
			events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: out, Id: pending[proc]})
			delete(pending, proc)
		}
	}
	for proc, i := range pending {
		events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: etcdOutput{unknown: true}, Id: i})
	}
	return events, sc.Err()
}

type kvInput struct {
	op    uint8 // 0 get, 1 put, 2 append
	key   string
	value string
}

var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		m := map[string][]porcupine.Operation{}
		var keys []string
		for _, v := range history {
			k := v.Input.(kvInput).key
			if _, ok := m[k]; !ok {
				keys = append(keys, k)
			}
			m[k] = append(m[k], v)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, m[k])
		}
		return out
	},
	PartitionEvent: func(history []porcupine.Event) [][]porcupine.Event {
		m := map[string][]porcupine.Event{}
		match := map[int]string{}
		var keys []string
		for _, v := range history {
			var k string
			if v.Kind == porcupine.CallEvent {
				k = v.Value.(kvInput).key
				match[v.Id] = k
			} else {
				k = match[v.Id]
			}
			if _, ok := m[k]; !ok {
				keys = append(keys, k)
			}
			m[k] = append(m[k], v)
		}
		var out [][]porcupine.Event
		for _, k := range keys {
			out = append(out, m[k])
		}
		return out
	},
	Init: func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		in := input.(kvInput)
		st := state.(string)
		switch in.op {
		case 0:
			return output.(string) == st, st
		case 1:
			return true, in.value
		default:
			return true, st + in.value
		}
	},
}

var kvLine = regexp.MustCompile(`{:process (\d+), :type :(\w+), :f :(\w+), :key "(.*)", :value (nil|"(.*)")}`)

func parseKv(path string) ([]porcupine.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []porcupine.Event
	pending := map[int]int{}
	id := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		m := kvLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		proc, _ := strconv.Atoi(m[1])
		if m[2] == "invoke" {
			op := map[string]uint8{"get": 0, "put": 1, "append": 2}[m[3]]
			events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.CallEvent, Value: kvInput{op, m[4], m[6]}, Id: id})
			pending[proc] = id
			id++
		} else {
			events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: m[6], Id: pending[proc]})
			delete(pending, proc)
		}
	}
	return events, sc.Err()
}

func main() {
	timeout := flag.Duration("timeout", 20*time.Second, "per-file timeout (Porcupine returns Unknown past it)")
	flag.Parse()
	root := flag.Arg(0)
	tsv, err := os.ReadFile(filepath.Join(root, "VERDICTS.tsv"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(254)
	}
	total := time.Duration(0)
	for _, line := range strings.Split(strings.TrimSpace(string(tsv)), "\n")[1:] {
		name := strings.Split(line, "\t")[0]
		var events []porcupine.Event
		var model porcupine.Model
		switch {
		case strings.HasPrefix(name, "porcupine/jepsen/"):
			events, err = parseEtcd(filepath.Join(root, name))
			model = etcdModel
		case strings.HasPrefix(name, "porcupine/kv/"):
			events, err = parseKv(filepath.Join(root, name))
			model = kvModel
		default:
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, name, err)
			os.Exit(254)
		}
		t0 := time.Now()
		res := porcupine.CheckEventsTimeout(model, events, *timeout)
		dt := time.Since(t0)
		total += dt
		verdict := map[porcupine.CheckResult]string{porcupine.Ok: "valid", porcupine.Illegal: "invalid", porcupine.Unknown: "unknown"}[res]
		fmt.Printf("%s\t%s\t%.6f\n", name, verdict, dt.Seconds())
	}
	fmt.Printf("TOTAL\t-\t%.6f\n", total.Seconds())
}
