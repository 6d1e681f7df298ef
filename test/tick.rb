# Real-program test target for ruby: a thread and the main loop hand work
# through a Queue (a condition variable, the timer thread), the main loop
# sleeps DELAY s between steps and appends one line per step to OUT.
# usage: ruby tick.rb OUT [STEPS=80] [DELAY=0.05]; prints "READY <pid>", then "DONE".
require 'digest'
out, steps, delay = ARGV[0], (ARGV[1] || 80).to_i, (ARGV[2] || 0.05).to_f
q, r = Queue.new, Queue.new
worker = Thread.new { while (n = q.pop) do r << Digest::SHA256.hexdigest(n.to_s)[0, 16] end }
puts "READY #{Process.pid}"
$stdout.flush
acc = {}
File.open(out, 'a') do |f|
  steps.times do |i|
    q << i * i
    h = r.pop
    acc[h] = i
    f.puts "#{i} #{h} #{acc.size} #{acc.keys.sum { |k| k.to_i(16) % 997 }}"
    f.flush
    sleep delay
  end
end
q << nil
worker.join
puts 'DONE'
