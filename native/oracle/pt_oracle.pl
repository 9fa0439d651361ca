#!/usr/bin/perl
# Oracle for the native core's differential tests: runs pt-query-digest's own
# SlowLogParser and QueryRewriter (loaded from the installed tool, so the code
# under comparison is exactly what pt-query-digest runs).
#
#   pt_oracle.pl events FILE    one JSON line per event parse_event returns:
#                                its properties (Perl hash, later keys win) and
#                                the fingerprint when arg is true
#   pt_oracle.pl fingerprint    NUL-separated queries on stdin -> NUL-separated
#                                fingerprints on stdout
#
# Strings are bytes; JSON carries each byte as one code point (\u00XX above 127).
use strict;
use warnings;
use JSON::PP;

my $tool = $ENV{PT_QUERY_DIGEST} || '/usr/bin/pt-query-digest';
require $tool;  # defines the packages; main() runs only when not require'd

my $mode = shift @ARGV or die "usage: $0 events FILE | fingerprint\n";
my $qr = QueryRewriter->new();

if ( $mode eq 'fingerprint' ) {
   binmode STDIN;
   binmode STDOUT;
   # Split by hand: fingerprint() chomps with $/, which must stay "\n".
   my $all = do { local $/; <STDIN> };
   $all = '' unless defined $all;
   $all =~ s/\0\z//;
   print $qr->fingerprint($_), "\0" for split /\0/, $all, -1;
   exit 0;
}

die "usage: $0 events FILE\n" unless $mode eq 'events' && @ARGV == 1;
open my $fh, '<', $ARGV[0] or die "$ARGV[0]: $!\n";
binmode STDOUT;
my $json = JSON::PP->new->ascii->canonical;
my $parser = SlowLogParser->new();
while ( my $event = $parser->parse_event(
      next_event => sub { return <$fh>; },
      tell       => sub { return tell $fh; },
   ) )
{
   my %out = map { $_ => (defined $event->{$_} ? "$event->{$_}" : undef) } keys %$event;
   $out{fingerprint} = $qr->fingerprint($event->{arg}) if $event->{arg};
   print $json->encode(\%out), "\n";
}
