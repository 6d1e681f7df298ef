// Real-program test target for node: no timers, a computation loop that
// keeps the CPU busy (a hash chain, a growing Map), appending one line per
// step to OUT; each step spins DELAY ms more without changing what it
// computes. usage: node compute.js OUT [STEPS=80] [DELAY=50]; prints "READY <pid>", then "DONE".
'use strict';
const fs = require('fs');
const crypto = require('crypto');
const out = process.argv[2];
const steps = Number(process.argv[3] || 80);
const delay = Number(process.argv[4] || 50);
const fd = fs.openSync(out, 'a');
const seen = new Map();
let h = 'seed';
console.log('READY', process.pid);
for (let i = 0; i < steps; i++) {
	const until = Date.now() + delay;
	for (let k = 0; k < 200; k++)
		h = crypto.createHash('sha256').update(h).digest('hex');
	while (Date.now() < until)
		;	/* busy, as a computation is */
	seen.set(h.slice(0, 6), i);
	fs.writeSync(fd, `${i} ${h.slice(0, 16)} ${seen.size}\n`);
}
console.log('DONE');
