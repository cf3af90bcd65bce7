#!/usr/bin/env python3
"""Writes a small kernel-layout core for fuzz_analyzer's seed corpus (and analyzer_test's fixture).

    tests/fuzz/make_analyzer_seed.py GDB_CORE OUT

GDB_CORE is a core written by gdb's gcore (notes last). OUT gets the same ELF core in the kernel's
layout (ELF header, program headers, PT_NOTE data, then the PT_LOAD data page-aligned), keeping the
contents only of the segments that hold a thread's stack pointer (NT_PRSTATUS rsp, x86_64) and of
segments up to 16 KiB (ELF headers, vDSO, small data); the others keep their addresses with p_filesz 0, as the kernel
writes the segments its coredump_filter leaves out. The result must stay under 200 KiB.
"""
import struct
import sys

PT_LOAD, PT_NOTE, NT_PRSTATUS, PAGE = 1, 4, 1, 4096
RSP_OFFSET = 112 + 19 * 8  # pr_reg in elf_prstatus, then rsp in user_regs_struct


def notes(data):
    off = 0
    while off + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        desc = off + 12 + ((namesz + 3) & ~3)
        yield ntype, data[desc:desc + descsz]
        off = desc + ((descsz + 3) & ~3)


def main(src, dst):
    core = open(src, "rb").read()
    ehdr = bytearray(core[:64])
    phoff, = struct.unpack_from("<Q", core, 32)
    phentsize, phnum = struct.unpack_from("<HH", core, 54)
    phdrs = [list(struct.unpack_from("<IIQQQQQQ", core, phoff + i * phentsize)) for i in range(phnum)]
    note_data = b"".join(core[p[2]:p[2] + p[5]] for p in phdrs if p[0] == PT_NOTE)
    sps = [struct.unpack_from("<Q", d, RSP_OFFSET)[0] for t, d in notes(note_data) if t == NT_PRSTATUS]

    out_phdrs, blobs = [], []
    offset = 64 + phnum * 56
    note_offset, offset = offset, offset + len(note_data)
    for p_type, flags, off, vaddr, paddr, filesz, memsz, align in phdrs:
        if p_type == PT_NOTE:
            out_phdrs.append((p_type, flags, note_offset, vaddr, paddr, len(note_data), 0, 1))
            continue
        keep = p_type == PT_LOAD and (any(vaddr <= sp < vaddr + memsz for sp in sps) or filesz <= 16 * 1024)
        offset = (offset + PAGE - 1) // PAGE * PAGE
        data = core[off:off + filesz] if keep else b""
        out_phdrs.append((p_type, flags, offset, vaddr, paddr, len(data), memsz, PAGE))
        blobs.append((offset, data))
        offset += len(data)
    struct.pack_into("<Q", ehdr, 32, 64)
    struct.pack_into("<Q", ehdr, 40, 0)  # no section headers (gdb writes some; the kernel none)
    struct.pack_into("<HHH", ehdr, 58, 0, 0, 0)
    struct.pack_into("<HH", ehdr, 54, 56, len(out_phdrs))
    out = bytearray(ehdr) + b"".join(struct.pack("<IIQQQQQQ", *p) for p in out_phdrs) + note_data
    for off, data in blobs:
        out += b"\0" * (off - len(out)) + data
    assert len(out) < 200 * 1024, len(out)
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
