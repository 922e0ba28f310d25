package acp

import (
	"bytes"
	"os"
	"strconv"
)

// groupLive reports whether a process of process group pgid is alive:
// neither a zombie nor dead. A zombie is gone for what it can do, and may
// stay: the agent was its parent, and the PID 1 it is handed to (in a
// container, say) may never reap it. Read from /proc, where a process's
// state and group are in its stat.
func groupLive(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return groupSignalable(pgid)
	}
	defer d.Close()
	want := []byte(strconv.Itoa(pgid))
	buf := make([]byte, 512)
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			if name[0] < '0' || name[0] > '9' {
				continue
			}
			f, err := os.Open("/proc/" + name + "/stat")
			if err != nil {
				continue // gone meanwhile
			}
			n, _ := f.Read(buf)
			f.Close()
			// pid (comm) state ppid pgrp ...: comm may hold anything but
			// ends at the last ')'.
			stat := buf[:n]
			i := bytes.LastIndexByte(stat, ')')
			if i < 0 {
				continue
			}
			fields := bytes.Fields(stat[i+1:])
			if len(fields) < 3 || fields[0][0] == 'Z' || fields[0][0] == 'X' || fields[0][0] == 'x' {
				continue
			}
			if bytes.Equal(fields[2], want) {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}
