// Real-program test target for node: a setInterval timer computes a
// sequence (big integers, a Map, an array in the JS heap) and appends one
// line per tick to OUT; DELAY ms between ticks (0: as fast as possible).
// usage: node interval.js OUT [STEPS=80] [DELAY=50]; prints "READY <pid>", then "DONE".
'use strict';
const fs = require('fs');
const crypto = require('crypto');
const out = process.argv[2];
const steps = Number(process.argv[3] || 80);
const delay = Number(process.argv[4] || 50);
const fd = fs.openSync(out, 'a');
let a = 0n, b = 1n, i = 0;
const seen = new Map(), hist = [];
console.log('READY', process.pid);
const t = setInterval(() => {
	[a, b] = [b, a + b];
	const h = crypto.createHash('sha256').update(a.toString()).digest('hex').slice(0, 16);
	seen.set(h, i);
	hist.push(Number(a % 1000003n));
	const sum = hist.reduce((x, y) => (x + y) % 999983, 0);
	fs.writeSync(fd, `${i} ${h} ${a.toString().length} ${sum} ${seen.size}\n`);
	if (++i === steps) {
		clearInterval(t);
		console.log('DONE');
	}
}, delay);
