// Package sgio joins multi-buffer frames: frame I/O middleware over an
// AF_XDP socket bound with XDP_USE_SG (xsk.Config.MultiBuffer), so that
// the layers above it and the stack see every frame, however large, as
// one descriptor and one contiguous slice of bytes.
//
// RX (the worker's goroutine): a frame that arrives as a chain of
// descriptors (xsk.OptContd on all but the last) is copied into one of
// the layer's reassembly buffers, and its descriptors go back below at
// once; the layer hands up a descriptor of its own, in an address range
// no frame below uses, that Data and Recycle recognise. A chain longer
// than the largest frame, or one that finds no free buffer, is dropped
// whole and counted. A frame of one descriptor passes through untouched.
//
// TX (under the queue's TX lock): the layer takes every transmit frame
// from below at the start and hands them out in units of adjacent frames
// (a span of the UMEM as large as the largest frame), so a frame is
// written once, in place; Enqueue cuts each into the descriptors of its
// chain. A unit is free again once every frame of its chain has come
// back through Complete. A chain the TX ring could take only part of is
// held, and its rest goes ahead of anything enqueued later.
package sgio
