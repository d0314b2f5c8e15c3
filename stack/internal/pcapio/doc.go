// Package pcapio records the frames a queue sends and receives in pcap
// format, as frame I/O middleware in the manner of gVisor's link/sniffer.
//
// One Writer serves a stack: it writes the file header when made, and
// every queue's chain gets a layer of its own from Wrap. A layer records
// each frame Receive hands up (as received, after anything below it) and
// each frame Enqueue takes down (as sent, before anything below it),
// through the Writer's buffer under its lock; the last layer's Close
// flushes the buffer. The pcap format (the "libpcap" file format, as
// tcpdump writes it, with nanosecond timestamps) is written here rather
// than with gopacket's pcapgo, which would add 2.2 MB (its layers
// package, and its init) to every program that links ustack; the tests
// read the files with pcapgo and tshark.
package pcapio
