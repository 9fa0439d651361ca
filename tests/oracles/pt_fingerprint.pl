#!/usr/bin/perl
# Oracle for govern's fingerprint tests: pt-query-digest's own QueryRewriter::fingerprint.
# Loads the QueryRewriter package out of the installed pt-query-digest script (the code the
# conformance tests compare against), reads NUL-separated queries on stdin and writes their
# fingerprints, NUL-separated, on stdout. Bytes in, bytes out, as pt-query-digest reads logs.
use strict;
use warnings;

my $script = shift @ARGV || '/usr/bin/pt-query-digest';
open my $fh, '<', $script or die "cannot read $script: $!";
my $source = do { local $/; <$fh> };
close $fh;
my ($package) = $source =~ m/^(package QueryRewriter;.*?^1;)$/ms
    or die "no QueryRewriter package in $script";
eval "{ $package }";
die $@ if $@;

binmode STDIN;
binmode STDOUT;
my $qr = QueryRewriter->new();
my $input = do { local $/; <STDIN> };
# fingerprint() chomps with the default $/ ("\n"), as inside pt-query-digest's pipeline.
print join("\0", map { $qr->fingerprint($_) } split(/\0/, $input, -1));
