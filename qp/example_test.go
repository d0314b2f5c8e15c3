package qp_test

import (
	"context"
	"fmt"
	"net"

	"github.com/ustack-dev/ustack/qp"
)

// Example connects two queue pairs over an in-memory stream (any
// reliable byte stream works: a kernel TCP connection, or one from
// ustack's stack.Stack), writes into the peer's registered memory with
// an RDMA Write with immediate, and reads it back with an RDMA Read.
func Example() {
	ctx := context.Background()
	newQP := func(dev *qp.Device, pd *qp.PD) (*qp.QP, *qp.CQ) {
		cq, _ := dev.CreateCQ(16)
		q, _ := pd.CreateQP(qp.DefaultQPConfig(cq, cq))
		q.Modify(qp.StateInit)
		return q, cq
	}
	wait := func(cq *qp.CQ) qp.WC {
		var wc [1]qp.WC
		for cq.Poll(wc[:]) == 0 {
			cq.Wait(ctx)
		}
		return wc[0]
	}

	// The server registers 64 bytes peers may write and read.
	sdev := qp.NewDevice()
	spd := sdev.AllocPD()
	smem := make([]byte, 64)
	smr, _ := spd.RegMR(smem, qp.LocalWrite|qp.RemoteWrite|qp.RemoteRead)
	sq, scq := newQP(sdev, spd)
	defer sq.Close()
	sq.PostRecv([]qp.RecvWR{{ID: 1}}) // consumed by the immediate

	// The client registers its source and sink buffers.
	cdev := qp.NewDevice()
	cpd := cdev.AllocPD()
	cmem := make([]byte, 64)
	cmr, _ := cpd.RegMR(cmem, qp.LocalWrite)
	cq, ccq := newQP(cdev, cpd)
	defer cq.Close()

	client, server := net.Pipe()
	go func() {
		req, _ := qp.ReadRequest(ctx, server)
		req.Accept(sq, []byte(fmt.Sprint(smr.Key()))) // tell the client the key
	}()
	reply, err := cq.Connect(ctx, client, []byte("hello"))
	if err != nil {
		fmt.Println(err)
		return
	}
	var rkey uint32
	fmt.Sscan(string(reply), &rkey)

	copy(cmem, "written by RDMA")
	cq.PostSend([]qp.SendWR{{ID: 7, Op: qp.WRWriteWithImm, Flags: qp.Signaled, Imm: 42,
		SGL: []qp.SGE{{Offset: 0, Len: 15, Key: cmr.Key()}}, RemoteKey: rkey, RemoteOffset: 8}})
	fmt.Println("client:", wait(ccq).Status)
	wc := wait(scq)
	fmt.Println("server: immediate", wc.Imm, "memory", string(smem[8:23]))

	cq.PostSend([]qp.SendWR{{ID: 8, Op: qp.WRRead, Flags: qp.Signaled,
		SGL: []qp.SGE{{Offset: 32, Len: 7, Key: cmr.Key()}}, RemoteKey: rkey, RemoteOffset: 8}})
	wc = wait(ccq)
	fmt.Println("client: read", wc.Len, "bytes:", string(cmem[32:39]))
	// Output:
	// client: success
	// server: immediate 42 memory written by RDMA
	// client: read 7 bytes: written
}

// ExampleQPConfig_onInput answers each Send where it arrives: the
// server's OnInput handler polls its receive CQ on the engine's goroutine
// (ustack's worker over a ustack connection, the queue pair's reader
// otherwise) and sends the reply from there, with no goroutine of the
// application's woken per message.
func ExampleQPConfig_onInput() {
	ctx := context.Background()
	dev := qp.NewDevice()
	pd := dev.AllocPD()
	mem := make([]byte, 64)
	mr, _ := pd.RegMR(mem, qp.LocalWrite)

	// The server: a receive posted per message; the handler upper-cases
	// what arrived and sends it back.
	scq, _ := dev.CreateCQ(16)
	var sq *qp.QP
	cfg := qp.DefaultQPConfig(scq, scq)
	cfg.OnInput = func() {
		var wc [4]qp.WC
		for i := range scq.Poll(wc[:]) {
			if wc[i].Op != qp.WCRecv || wc[i].Status != qp.StatusSuccess {
				continue
			}
			msg := []byte(string(mem[:wc[i].Len]))
			for j, c := range msg {
				if 'a' <= c && c <= 'z' {
					msg[j] = c - 'a' + 'A'
				}
			}
			sq.PostRecv([]qp.RecvWR{{SGL: []qp.SGE{{Len: 32, Key: mr.Key()}}}})
			sq.PostSend([]qp.SendWR{{Op: qp.WRSend, Flags: qp.Inline, Inline: msg}})
		}
	}
	sq, _ = pd.CreateQP(cfg)
	sq.Modify(qp.StateInit)
	defer sq.Close()
	sq.PostRecv([]qp.RecvWR{{SGL: []qp.SGE{{Len: 32, Key: mr.Key()}}}})

	// The client: an ordinary application goroutine that polls.
	cdev := qp.NewDevice()
	cpd := cdev.AllocPD()
	cmem := make([]byte, 64)
	cmr, _ := cpd.RegMR(cmem, qp.LocalWrite)
	ccq, _ := cdev.CreateCQ(16)
	cq, _ := cpd.CreateQP(qp.DefaultQPConfig(ccq, ccq))
	cq.Modify(qp.StateInit)
	defer cq.Close()

	client, server := net.Pipe()
	go func() {
		req, _ := qp.ReadRequest(ctx, server)
		req.Accept(sq, nil)
	}()
	if _, err := cq.Connect(ctx, client, nil); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range []string{"hello", "queue pairs"} {
		cq.PostRecv([]qp.RecvWR{{SGL: []qp.SGE{{Len: 32, Key: cmr.Key()}}}})
		cq.PostSend([]qp.SendWR{{Op: qp.WRSend, Flags: qp.Inline, Inline: []byte(m)}})
		var wc [1]qp.WC
		for {
			if ccq.Poll(wc[:]) == 1 && wc[0].Op == qp.WCRecv {
				break
			}
			ccq.Wait(ctx)
		}
		fmt.Println(string(cmem[:wc[0].Len]))
	}
	// Output:
	// HELLO
	// QUEUE PAIRS
}
