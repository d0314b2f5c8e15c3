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
