package metrics

import (
	"reflect"
	"strings"

	"github.com/ustack-dev/ustack/stack"
)

// family is one exported metric: its name after "ustack_", its help
// text, and the labels its series carry after the queue label (for a
// per-queue counter).
type family struct {
	name   string
	help   string
	labels []string
	gauge  bool
}

// export says how one field of stack.Stats or stack.QueueStats reaches
// Prometheus. Exactly one of its parts is set.
type export struct {
	// series are the metric series the field's value is exported as,
	// each a family with its label values (after queue).
	series []series
	// netstack names the tcpip.Stats counter the field copies (field
	// path, e.g. "TCP.Retransmits"): exported with the rest of
	// netstack's counters as ustack_netstack_…, not twice.
	netstack string
	// custom says which code of the Collector exports the field, for a
	// field that is not one counter (an array by reason, a histogram).
	custom string
	// none says why the field is no counter (a state, a label).
	none string
}

// series is one family with its label values.
type series struct {
	fam    *family
	labels []string
	// ifSet exports the series only when the struct holding the field
	// is not all zero: the fault counters, present when faults are
	// configured.
	ifSet bool
}

// own exports a field as a metric of its own.
func own(name, help string) export {
	return export{series: []series{{fam: &family{name: name, help: help}}}}
}

// shared is a field's series in a family it shares with other fields.
func shared(f *family, labels ...string) series { return series{fam: f, labels: labels} }

// Families several fields share, told apart by a label, and the one the
// Collector fills from an array.
var (
	famDrops = &family{name: "rx_dropped_total",
		help:   "Received frames dropped, by reason: runt and bad_checksum in ustack's worker; rx_dropped, rx_invalid, rx_ring_full and fill_ring_empty in the kernel's AF_XDP socket.",
		labels: []string{"reason"}}
	famFaults = &family{name: "faults_total",
		help:   "Faults injected (Config.Faults), by direction and kind; skipped counts faults drawn but not applied for want of a spare frame.",
		labels: []string{"direction", "fault"}}
	famDirectMisses = &family{name: "tcp_direct_misses_total",
		help:   "TCP packets the fast path's send left to netstack's path (Config.Debug.NoFastPath), by reason: size (a GSO packet of several segments, or one past the MTU), route (loopback, IP options, firewall rules, packet sockets), unresolved (next hop not resolved yet).",
		labels: []string{"reason"}}
	famFastMisses = &family{name: "tcp_fast_misses_total",
		help:   "Received TCP segments the fast path's receive (header prediction, Config.Debug.NoFastPath) left to netstack, by reason: busy (lock held elsewhere or segments queued ahead), state (not established), header (flags, options other than the timestamp, pure ACKs), sequence (not the next expected, or past the window or buffer), ack (outside [SND.UNA, SND.NXT], or PAWS), recovery (loss recovery, SACK or out-of-order state, zero window).",
		labels: []string{"reason"}}
	famPollLeft = &family{name: "poll_bytes_left_total",
		help:   "Bytes connections read on the worker (queue pairs) got from the receive queue rather than from the frame, by reason, as they arrive there: slow (netstack's ordinary path: a fast-path miss or data out of order), behind (earlier bytes still queued), refused (the queue pair ending), large (a coalesced segment past 64 KiB), before (queued before the consumer was set).",
		labels: []string{"reason"}}
	famHandlerLeft = &family{name: "handler_bytes_left_total",
		help:   "Bytes handlers got from the receive queue rather than from the frame, by reason, as they arrive there: slow (netstack's ordinary path: a fast-path miss or data out of order), behind (earlier bytes still queued), refused (the stream busy or closing), large (a coalesced segment past 64 KiB), before (queued before the stream was set up).",
		labels: []string{"reason"}}
	famSynMisses = &family{name: "tcp_syn_misses_total",
		help:   "SYNs to a listener the worker left to netstack's listener (Config.Debug.NoFastPath), by reason: cookie (SynCookies auto with half-open connections to spare, worker not behind), busy (listener locked elsewhere, no TX frame), route (peer off ustack's on-link prefixes with no default router of its family), unresolved (off-link peer, router's MAC not resolved yet), other (listener shutting down, IP settings).",
		labels: []string{"reason"}}
	famDemotions = &family{name: "owned_fast_path_demotions_by_reason_total",
		help:   "Connections the owned fast path handed back to netstack, by reason: a segment or send it does not do (dup-ack, sack, out-of-order, old-data, window-limited, control-flags, ...), timeout (data in flight past the retransmission deadline), close (the handler closed the connection).",
		labels: []string{"reason"}}
	famRefused = &family{name: "owned_fast_path_promotions_refused_by_reason_total",
		help:   "Promotions to the owned fast path not made, by reason: netstack's (busy, state, recovery, receive, unsent, in-flight, window, keepalive) or fast-path (its slab full).",
		labels: []string{"reason"}}
	famSteering = &family{name: "steering_packets_total",
		help:   "Packets the XDP steering program classified, by verdict reason.",
		labels: []string{"reason"}}
)

// queueExports is the metric of every counter of stack.QueueStats, by
// field path. NewCollector walks QueueStats by reflection: a counter
// missing here is still exported, under a name made from its path and
// with a help text saying so, and TestEveryCounterHasMetric fails.
var queueExports = map[string]export{
	"Queue": {none: "the queue's number: the queue label of every per-queue series"},

	"RxPackets":         own("queue_rx_packets_total", "Frames the queue's worker took off the RX ring and delivered to netstack."),
	"TxPackets":         own("queue_tx_packets_total", "Packets netstack wrote to the queue (a GSO packet counts once)."),
	"TxFrames":          own("queue_tx_frames_total", "Frames the queue's written packets took on the TX ring (more than tx_packets with GSO)."),
	"TxNoFrame":         own("queue_tx_no_frame_total", "Writes that found no free frame or TX slot."),
	"TxRingFull":        own("queue_tx_ring_full_total", "Frames written that found the TX ring full and were freed unsent (netstack retries them)."),
	"TxOversize":        own("queue_tx_oversize_total", "Packets larger than a frame, or that segmentation could not write, dropped."),
	"RxRunt":            {series: []series{shared(famDrops, "runt")}},
	"RxBadChecksum":     {series: []series{shared(famDrops, "bad_checksum")}},
	"RxPartialChecksum": own("queue_rx_partial_checksum_total", "TCP/UDP packets accepted with a partial checksum (CHECKSUM_PARTIAL) from a veth peer."),
	"RxInline":          own("queue_rx_inline_total", "TCP endpoints whose segments the worker processed itself after an RX round, instead of waking a netstack goroutine."),
	"RxCoalesced":       own("queue_rx_coalesced_total", "Received TCP segments GRO merged into the segment before them."),
	"KickTime":          own("queue_kick_seconds_total", "Seconds the queue's kicks (sendto on the AF_XDP socket) took, whoever made them; on veth in copy mode a kick runs the peer's receive path."),
	"WorkerBusy":        own("queue_worker_busy_seconds_total", "Seconds the queue's worker spent at work (RX batches and what they ran, kicks, connections made ready), not polling an empty ring, sleeping or yielding to goroutines."),
	"YieldTime":         own("queue_worker_yield_seconds_total", "Seconds the queue's worker had yielded its P to other goroutines: with one P, the application's goroutines' time on the worker's CPU."),

	// The AF_XDP socket (zero over a memory wire): the kernel's
	// XDP_STATISTICS, then xsk's own counters.
	"XSK.RxDropped": {series: []series{
		{fam: &family{name: "xsk_rx_dropped_total", help: "Frames the kernel dropped before the socket's RX ring, e.g. larger than a UMEM frame (XDP_STATISTICS rx_dropped)."}},
		shared(famDrops, "rx_dropped")}},
	"XSK.RxInvalid": {series: []series{
		{fam: &family{name: "xsk_rx_invalid_total", help: "Descriptors the kernel counted invalid on the socket's RX side (XDP_STATISTICS rx_invalid_descs)."}},
		shared(famDrops, "rx_invalid")}},
	"XSK.TxInvalid": own("xsk_tx_invalid_total", "TX ring descriptors the kernel rejected as invalid (XDP_STATISTICS tx_invalid_descs)."),
	"XSK.RxRingFull": {series: []series{
		{fam: &family{name: "xsk_rx_ring_full_total", help: "Frames the kernel dropped because the socket's RX ring was full (XDP_STATISTICS rx_ring_full)."}},
		shared(famDrops, "rx_ring_full")}},
	"XSK.FillRingEmpty": {series: []series{
		{fam: &family{name: "xsk_fill_ring_empty_total", help: "Times the kernel had a frame to deliver and found the fill ring empty; the frame is dropped (XDP_STATISTICS rx_fill_ring_empty_descs)."}},
		shared(famDrops, "fill_ring_empty")}},
	"XSK.TxRingEmpty":             own("xsk_tx_ring_empty_total", "Times the kernel, woken to send, found the TX ring empty (XDP_STATISTICS tx_ring_empty_descs)."),
	"XSK.RxPackets":               own("xsk_rx_packets_total", "Frames ustack took off the socket's RX ring."),
	"XSK.RxBytes":                 own("xsk_rx_bytes_total", "Bytes of the frames ustack took off the socket's RX ring."),
	"XSK.TxPackets":               own("xsk_tx_packets_total", "Frames ustack put on the socket's TX ring."),
	"XSK.TxBytes":                 own("xsk_tx_bytes_total", "Bytes of the frames ustack put on the socket's TX ring."),
	"XSK.Kicks":                   own("xsk_kicks_total", "sendto(2) calls waking the kernel to send the TX ring, retries included."),
	"XSK.KickRetries":             own("xsk_kick_retries_total", "Kicks repeated because the kernel answered EAGAIN, EBUSY or ENOBUFS (copy mode sends a budget per call)."),
	"XSK.FillStarved":             own("xsk_fill_starved_total", "Refills that had no idle frame to give while the fill ring was empty."),
	"MultiBuffer.RxChains":        own("multibuffer_rx_chains_total", "Frames larger than a UMEM frame received as a chain of frames and joined."),
	"MultiBuffer.RxChainsDropped": own("multibuffer_rx_chains_dropped_total", "Received chains dropped whole: longer than the MTU allows, or no reassembly buffer free."),
	"MultiBuffer.TxChains":        own("multibuffer_tx_chains_total", "Frames larger than a UMEM frame sent as a chain of frames."),
	"XSK.TxRingFull":              own("xsk_tx_ring_full_total", "Transmit batches that did not all fit on the TX ring."),

	// Injected faults (Config.Faults), per direction.
	"FaultsRX.Dropped":    {series: []series{{fam: famFaults, labels: []string{"rx", "drop"}, ifSet: true}}},
	"FaultsRX.Corrupted":  {series: []series{{fam: famFaults, labels: []string{"rx", "corrupt"}, ifSet: true}}},
	"FaultsRX.Duplicated": {series: []series{{fam: famFaults, labels: []string{"rx", "duplicate"}, ifSet: true}}},
	"FaultsRX.Reordered":  {series: []series{{fam: famFaults, labels: []string{"rx", "reorder"}, ifSet: true}}},
	"FaultsRX.Delayed":    {series: []series{{fam: famFaults, labels: []string{"rx", "delay"}, ifSet: true}}},
	"FaultsRX.Skipped":    {series: []series{{fam: famFaults, labels: []string{"rx", "skipped"}, ifSet: true}}},
	"FaultsTX.Dropped":    {series: []series{{fam: famFaults, labels: []string{"tx", "drop"}, ifSet: true}}},
	"FaultsTX.Corrupted":  {series: []series{{fam: famFaults, labels: []string{"tx", "corrupt"}, ifSet: true}}},
	"FaultsTX.Duplicated": {series: []series{{fam: famFaults, labels: []string{"tx", "duplicate"}, ifSet: true}}},
	"FaultsTX.Reordered":  {series: []series{{fam: famFaults, labels: []string{"tx", "reorder"}, ifSet: true}}},
	"FaultsTX.Delayed":    {series: []series{{fam: famFaults, labels: []string{"tx", "delay"}, ifSet: true}}},
	"FaultsTX.Skipped":    {series: []series{{fam: famFaults, labels: []string{"tx", "skipped"}, ifSet: true}}},
}

// statsExports is the metric of every field of stack.Stats other than
// the per-queue ones, by field path, as queueExports is for QueueStats.
var statsExports = map[string]export{
	"Queues":   {custom: "per queue, by queueExports"},
	"Steering": {custom: "steering_packets_total, one series per bpf.Reason"},

	"FastPath.Owned.Flows":            {series: []series{{fam: &family{name: "owned_fast_path_flows", help: "Handler connections the owned fast path carries now (Config.Debug.NetstackFastPath).", gauge: true}}}},
	"FastPath.Owned.Promotions":       own("owned_fast_path_promotions_total", "Handler connections netstack handed to the owned fast path."),
	"FastPath.Owned.Demotions":        own("owned_fast_path_demotions_total", "Connections the owned fast path handed back to netstack (owned_fast_path_demotions_by_reason_total says why)."),
	"FastPath.Owned.DemotionsBy":      {custom: "owned_fast_path_demotions_by_reason_total, one series per reason"},
	"FastPath.Owned.PromoteRefused":   own("owned_fast_path_promotions_refused_total", "Promotions to the owned fast path not made (owned_fast_path_promotions_refused_by_reason_total says why)."),
	"FastPath.Owned.PromoteRefusedBy": {custom: "owned_fast_path_promotions_refused_by_reason_total, one series per reason"},
	"FastPath.Owned.SegmentsIn":       own("owned_fast_path_segments_received_total", "TCP segments the owned fast path received."),
	"FastPath.Owned.SegmentsOut":      own("owned_fast_path_segments_sent_total", "TCP segments the owned fast path sent, pure ACKs included."),
	"FastPath.Owned.BytesIn":          own("owned_fast_path_bytes_received_total", "Payload bytes the owned fast path received and gave to handlers."),
	"FastPath.Owned.BytesOut":         own("owned_fast_path_bytes_sent_total", "Payload bytes the owned fast path sent (first transmissions: it never retransmits)."),
	"FastPath.Owned.TakeBackFailed":   own("owned_fast_path_take_back_failed_total", "Connections netstack would not take back from the owned fast path (their state inconsistent: a bug), which ended."),
	"FastPath.Owned.PureAcks":         own("owned_fast_path_pure_acks_total", "Pure ACKs the owned fast path sent for data no reply acknowledged in time."),
	"AttachMode":                      {none: "how the XDP program is attached: a state, not a counter"},
	"OwnedPorts":                      {series: []series{{fam: &family{name: "owned_ports", help: "(address, protocol, port) entries steered to ustack now.", gauge: true}}}},

	"IP.PacketsReceived": {netstack: "IP.PacketsReceived"},
	"IP.PacketsSent":     {netstack: "IP.PacketsSent"},
	"IP.Malformed":       {netstack: "IP.MalformedPacketsReceived"},

	"TCP.ActiveOpens":        {netstack: "TCP.ActiveConnectionOpenings"},
	"TCP.PassiveOpens":       {netstack: "TCP.PassiveConnectionOpenings"},
	"TCP.CurrentEstablished": {netstack: "TCP.CurrentEstablished"},
	"TCP.SegmentsSent":       {netstack: "TCP.SegmentsSent"},
	"TCP.SegmentsReceived":   {netstack: "TCP.ValidSegmentsReceived"},
	"TCP.ChecksumErrors":     {netstack: "TCP.ChecksumErrors"},
	"TCP.ResetsSent":         {netstack: "TCP.ResetsSent"},
	"TCP.Retransmits":        {netstack: "TCP.Retransmits"},
	"TCP.Timeouts":           {netstack: "TCP.Timeouts"},
	"TCP.FastRetransmits":    {netstack: "TCP.FastRetransmit"},
	"TCP.SACKRecoveries":     {netstack: "TCP.SACKRecovery"},
	"TCP.TLPRecoveries":      {netstack: "TCP.TLPRecovery"},
	"TCP.RecoveryProbes":     {netstack: "TCP.RecoveryProbes"},
	"TCP.TimeWait":           {netstack: "TCP.CurrentTimeWait"},
	"TCP.TimeWaitOverflows":  {netstack: "TCP.TimeWaitOverflows"},

	"FastPath.Received":            own("tcp_segments_fast_total", "Received TCP segments the fast path's receive (header prediction, Config.Debug.NoFastPath) processed, a part of the TCP segments received."),
	"FastPath.MissBusy":            {series: []series{shared(famFastMisses, "busy")}},
	"FastPath.MissState":           {series: []series{shared(famFastMisses, "state")}},
	"FastPath.MissHeader":          {series: []series{shared(famFastMisses, "header")}},
	"FastPath.MissSequence":        {series: []series{shared(famFastMisses, "sequence")}},
	"FastPath.MissAck":             {series: []series{shared(famFastMisses, "ack")}},
	"FastPath.MissRecovery":        {series: []series{shared(famFastMisses, "recovery")}},
	"FastPath.Sent":                own("tcp_segments_direct_total", "TCP segments the fast path's direct send wrote to the link (Config.Debug.NoFastPath), a part of the TCP segments sent."),
	"FastPath.SendMissSize":        {series: []series{shared(famDirectMisses, "size")}},
	"FastPath.SendMissRoute":       {series: []series{shared(famDirectMisses, "route")}},
	"FastPath.SendMissUnresolved":  {series: []series{shared(famDirectMisses, "unresolved")}},
	"FastPath.Poll.Direct":         own("poll_bytes_direct_total", "Bytes connections read on the worker (queue pairs) were given straight from the receive frame by the fast path's receive: one copy each."),
	"FastPath.Poll.Queued":         own("poll_bytes_queued_total", "Bytes connections read on the worker (queue pairs) read from the receive queue: segments the fast path left to netstack, or that arrived behind queued bytes."),
	"FastPath.Poll.LeftSlow":       {series: []series{shared(famPollLeft, "slow")}},
	"FastPath.Poll.LeftBehind":     {series: []series{shared(famPollLeft, "behind")}},
	"FastPath.Poll.LeftRefused":    {series: []series{shared(famPollLeft, "refused")}},
	"FastPath.Poll.LeftLarge":      {series: []series{shared(famPollLeft, "large")}},
	"FastPath.Poll.LeftBefore":     {series: []series{shared(famPollLeft, "before")}},
	"FastPath.Handler.Direct":      own("handler_bytes_direct_total", "Bytes handlers' OnTraffic was given straight from the receive frame by the fast path's receive, with no copy."),
	"FastPath.Handler.Queued":      own("handler_bytes_queued_total", "Bytes handlers' OnTraffic was given from the receive queue: segments the fast path left to netstack, or that arrived while the stream could not take them at once."),
	"FastPath.Handler.LeftSlow":    {series: []series{shared(famHandlerLeft, "slow")}},
	"FastPath.Handler.LeftBehind":  {series: []series{shared(famHandlerLeft, "behind")}},
	"FastPath.Handler.LeftRefused": {series: []series{shared(famHandlerLeft, "refused")}},
	"FastPath.Handler.LeftLarge":   {series: []series{shared(famHandlerLeft, "large")}},
	"FastPath.Handler.LeftBefore":  {series: []series{shared(famHandlerLeft, "before")}},

	"Syn.CookiesSent":      {netstack: "TCP.ListenOverflowSynCookieSent"},
	"Syn.CookiesValidated": {netstack: "TCP.ListenOverflowSynCookieRcvd"},
	"Syn.CookiesFailed":    {netstack: "TCP.ListenOverflowInvalidSynCookieRcvd"},
	"Syn.OnWorker":         own("tcp_syns_worker_total", "SYNs the worker answered itself with a SYN cookie's SYN-ACK (Config.Debug.NoFastPath), a part of the SYN cookies sent."),
	"Syn.OnWorkerPressure": own("tcp_syns_worker_pressure_total", "SYNs of tcp_syns_worker_total answered while half the queue's receive frames or more waited on the RX ring, when every SYN gets a cookie (Config.UMEMSize)."),
	"Syn.InXDP":            own("tcp_syns_xdp_total", "SYNs the steering program answered itself with a SYN cookie's SYN-ACK (XDP_TX; Config.XDPSyn), not in the SYN cookies sent."),
	"Syn.XDPRenewed":       own("tcp_syns_xdp_renewed_total", "Times the worker had the steering program answer a listener's SYNs for a while longer."),
	"Syn.XDPFailed":        own("tcp_syns_xdp_failed_total", "Times handing a listener's SYNs to the steering program failed (a map update)."),
	"Syn.DroppedOnWorker":  own("tcp_syns_worker_dropped_total", "SYNs the worker dropped because the listener's accept queue was full, as the listener drops them."),
	"Syn.MissCookie":       {series: []series{shared(famSynMisses, "cookie")}},
	"Syn.MissBusy":         {series: []series{shared(famSynMisses, "busy")}},
	"Syn.MissRoute":        {series: []series{shared(famSynMisses, "route")}},
	"Syn.MissUnresolved":   {series: []series{shared(famSynMisses, "unresolved")}},
	"Syn.MissOther":        {series: []series{shared(famSynMisses, "other")}},

	"UDP.PacketsReceived": {netstack: "UDP.PacketsReceived"},
	"UDP.PacketsSent":     {netstack: "UDP.PacketsSent"},
	"UDP.ChecksumErrors":  {netstack: "UDP.ChecksumErrors"},

	"Capture.Packets": own("capture_packets_total", "Frames the packet capture (Config.Capture) recorded."),
	"Capture.Bytes":   own("capture_bytes_total", "Bytes the packet capture wrote, record headers included."),
	"Capture.Dropped": own("capture_dropped_total", "Frames the packet capture did not record because of its size bound."),
	"Capture.Errors":  own("capture_errors_total", "Frames the packet capture did not record because its writer failed."),

	"Trace": {custom: "the trace_stage families (Config.Trace)"},
}

// field is one leaf of a Stats type: its path and index.
type field struct {
	path  string // "XSK.Kicks"
	index []int
}

// leaves lists t's fields in order, descending into structs other than
// the ones that are leaves themselves (arrays, slices, pointers): every
// field that may hold a counter.
func leaves(t reflect.Type) []field {
	var out []field
	var walk func(t reflect.Type, path []string, index []int)
	walk = func(t reflect.Type, path []string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			p, ix := append(path[:len(path):len(path)], f.Name), append(index[:len(index):len(index)], i)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, p, ix)
				continue
			}
			out = append(out, field{path: strings.Join(p, "."), index: ix})
		}
	}
	walk(t, nil, nil)
	return out
}

// table is one Stats type with its exports.
type table struct {
	typ      reflect.Type
	exports  map[string]export
	name     string // the exports variable's, for messages
	prefix   string // of the metric a field missing from exports gets
	perQueue bool   // series labelled by queue
}

var (
	queueTable = table{reflect.TypeFor[stack.QueueStats](), queueExports, "queueExports", "queue", true}
	statsTable = table{reflect.TypeFor[stack.Stats](), statsExports, "statsExports", "", false}
)

// exportOf returns how the field at path is exported: from the table's
// exports or, for a field they lack, as a counter of its own named after
// its path whose help says it has none: exported all the same, and
// caught by TestEveryCounterHasMetric.
func (tb table) exportOf(path string) (export, bool) {
	if e, ok := tb.exports[path]; ok {
		return e, true
	}
	name := tb.prefix
	for _, p := range strings.Split(path, ".") {
		name += "_" + snake(p)
	}
	return own(strings.TrimPrefix(name, "_")+"_total",
		"stack."+tb.typ.Name()+"."+path+" (no help text yet: add it to the metrics package's "+tb.name+")."), false
}
