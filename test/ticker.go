// Real-program test target for Go: a time.Ticker and a goroutine computing
// on a channel (the Go runtime: threads, futexes, epoll netpoller, signals),
// one line per tick appended to OUT; DELAY ms between ticks (0: no ticker).
// usage: ticker OUT [STEPS=80] [DELAY=50]; prints "READY <pid>", then "DONE".
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"time"
)

func arg(i int, def int) int {
	if len(os.Args) > i {
		if v, err := strconv.Atoi(os.Args[i]); err == nil {
			return v
		}
	}
	return def
}

func main() {
	f, err := os.OpenFile(os.Args[1], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0644)
	if err != nil {
		panic(err)
	}
	steps, delay := arg(2, 80), arg(3, 50)
	in, out := make(chan int), make(chan string)
	go func() {
		for n := range in {
			out <- fmt.Sprintf("%x", sha256.Sum256([]byte(strconv.Itoa(n))))[:16]
		}
	}()
	var tick <-chan time.Time
	if delay > 0 {
		t := time.NewTicker(time.Duration(delay) * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	fmt.Println("READY", os.Getpid())
	seen := map[string]int{}
	for i := 0; i < steps; i++ {
		if tick != nil {
			<-tick
		}
		in <- i * i
		h := <-out
		seen[h] = i
		fmt.Fprintf(f, "%d %s %d\n", i, h, len(seen))
	}
	fmt.Println("DONE")
}
