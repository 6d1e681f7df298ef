#!/usr/bin/perl
# Real-program test target: 3 perl ithreads (OS threads) each compute a
# sequence and append one line per step to OUT.<i> (own O_APPEND handle,
# autoflush), sleeping DELAY s between steps; prints "READY <pid>" first
# and "DONE <sum>" at the end.  usage: mtseq.pl OUT [STEPS=60] [DELAY=0.05]
use strict;
use warnings;
use threads;
use IO::Handle;
use Time::HiRes qw(sleep);
use Digest::MD5 qw(md5_hex);

my $out = $ARGV[0] // die "usage: $0 OUT [STEPS] [DELAY]\n";
my $steps = $ARGV[1] // 60;
my $delay = $ARGV[2] // 0.05;
$| = 1;
print "READY $$\n";

sub work {
	my ($id) = @_;
	open(my $fh, '>>', "$out.$id") or die "$out.$id: $!";
	$fh->autoflush(1);
	my ($x, %seen) = ($id + 1);
	for my $i (0 .. $steps - 1) {
		$x = ($x * 48271) % 2147483647;
		my $h = md5_hex("$id:$i:$x");
		$seen{substr($h, 0, 2)}++;
		print $fh "T$id $i $x $h " . scalar(keys %seen) . "\n";
		sleep($delay) if $delay > 0;
	}
	close $fh;
	return $x;
}

my @t = map { threads->create(\&work, $_) } 0 .. 2;
my $sum = 0;
$sum = ($sum * 31 + $_->join()) % 2147483647 for @t;
print "DONE $sum\n";
