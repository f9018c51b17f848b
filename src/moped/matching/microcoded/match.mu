# MPI and Portals-style matching for the microcoded match unit.
#
# Segments follow the paper's Table 1: initialisation (once, at boot), header, list
# item (shared part, fast path, slow path) and flush. Every list item is 8 words and
# the header 8 words, popped one per instruction.
#
# Header words:   h0 match bits | h1 initiator pid (bits 0-15), op (32-47: 1 put, 2 get)
#                 h2 length | h3 remote offset | h4 header data | h5, h6 reserved
#                 h7 source nid (bits 0-15), appended by the NIC
# List item words: w0 match bits | w1 ignore bits
#                 w2 nid (0-15), pid (16-31), flags (32-47), threshold (48-63)
#                 w3 MD length | w4 local offset | w5 max size | w6, w7 not used here
# Flags: 0x01 valid, 0x02 respond to puts, 0x04 respond to gets, 0x08 use remote
#        offset, 0x10 use max size, 0x20 allow truncation, 0x40 end of list.
# A nid or pid of 0xffff in an item matches any source.
#
# Output words: 0 when an item fails; 1, offset, length when it matches; 2 when the
# list ends without a match.
#
# ALU registers: a1 header nid/pid, a2 header length, a3 remote offset, a4 a5 scratch,
# a6 item w2, a7 MD length, a8 offset, a9 max size, a10 put masks, a11 remaining and
# then length, a12 wildcard pair, a13 get masks, a14 match code, a15 no-match code.
# Ternary registers: t1 header match bits, t2 item match bits, t3 flag patterns,
# t4 flag masks for the header's op, t5 ignore bits, t6 item flags in every section,
# t10 remote-offset and max-size patterns.
# Flag check sections (t3 pattern, t4 mask) write p12..p15:
#   p12 valid and op allowed; p13 the same, and none of end, remote offset, max size
#   (the fast path); p14 truncation allowed; p15 end of list.

init:   alu add a14, a0, a0 lo=1
        alu add a15, a0, a0 lo=2
        alu add a12, a0, a0 lo=0xffffffff
        alu add a4, a0, a0 lo=0x00070007
        alu add a4, a0, a4 hi=0x00400020
        alu add a13, a0, a0 lo=0x005d0005 ; cp t3, a4
        alu add a13, a0, a13 hi=0x00400020
        alu add a10, a0, a0 lo=0x005b0003
        alu add a10, a0, a10 hi=0x00400020
        alu add a4, a0, a0 lo=0x00100008
        cp t10, a4

# Header: 8 pops, then the source pair built from h7 and h1. The permute needs a word
# of its own: a word reads its operands before its own pop lands, so h7 can be used
# no earlier than the word after the one that pops it.
header: in t1
        in a4
        in a2 ; alu cmpeq.16 a4, a0 hi=1 wr=0b0100
        in a3 ; cp t4, a13
        in    ; cp t4, a10 @p10
        in
        in
        in a5
        alu perm a1, a5, a4, [a0 a1 b0 b1 z z z z]

# List item, shared part (s0..s5). p12 (match bits) decides at s3, with s4 and s5 in
# its delay slots; the fast path's flag check decides at s5, with the fast path's first
# two words (the last two pops, needed on every path) in its delay slots. All six run
# for a matching item, which then takes 12 words.
item:   in t2
item1:  in t5
item2:  in a6, t6 swz=2222 ; ter eq t2, t1, t5 ign wr=0b0001
item3:  in a7 ; alu cmpeq.16 a6, a1 wr=0b1011 ; ter eq.16 t6, t3, t4 care wr=0b1111 ; brz p12, fail
        in a8 ; alu cmpeq.16 a6, a12 wr=0b0011 or
        in a9 ; alu sub a11, a7, a8 ; pa and p1, p8, p9 ; brz p13, slow

# Fast path: p1 = source and threshold, p2 = length fits or may be truncated.
        in    ; alu cmple a2, a11 wr=0b0001 ; pa andn p1, p1, p11
        in    ; alu add a11, a2, a0 @p8 ; pb or p2, p8, p14
decide: pa and p3, p1, p2
report: brz p3, late ; cp out, a14 @p3
        cp out, a8 @p3
        cp out, a11 @p3

# Flush the item the list manager sent past the match, then wait for a header.
flush:  in
        in
        in
        in
        in
        in ; jmp header
        in
        in

# Match bits failed at s3 (delay slots s4, s5): drain w6, w7, report, and start the
# next item (its w0 in the last delay slot).
fail:   in ; cp out, a0 ; jmp item1
        in
        in t2

# A later test failed: report and start the next item.
late:   in t2 ; cp out, a0 ; jmp item3
        in t5
        in a6, t6 swz=2222 ; ter eq t2, t1, t5 ign wr=0b0001

# Slow path: end of list, remote offset (clamped to the MD), max size.
slow:   alu cmplt a3, a7 wr=0b0001 ; ter eq.16 t6, t10, t10 care wr=0b0011 ; pa and p1, p1, p12 ; br p15, end
        pa and p4, p12, p8 ; pb andn p5, p12, p8
        alu add a8, a3, a0 @p4
        alu add a8, a7, a0 @p5
        alu sub a11, a7, a8
        alu cmplt a11, a9 wr=0b0001
        alu cmple a2, a11 wr=0b0010 ; pa and p5, p13, p8 ; jmp decide
        alu add a11, a2, a0 @p9 ; pa andn p5, p5, p14 ; pb or p2, p9, p14
        pa andn p1, p1, p5

end:    cp out, a15 ; jmp header
        nop
        nop
