#!/usr/bin/env python3
"""Embed a file in C: writes a header defining

    static const unsigned char NAME[] = {...};  /* the bytes, then a NUL */
    static const size_t NAME_len = ...;         /* without the NUL */

Usage: embed_file.py NAME INPUT OUTPUT

A byte array rather than a string literal: -Wpedantic rejects literals
longer than the 4095 characters C99 guarantees, and the flame graph's
template is far longer."""
import sys


def main():
    name, src, dst = sys.argv[1:4]
    with open(src, 'rb') as f:
        data = f.read()
    lines = []
    for i in range(0, len(data), 16):
        lines.append('  ' + ' '.join('0x%02x,' % b for b in data[i:i + 16]))
    with open(dst, 'w') as f:
        f.write('/* Generated from %s by agent/embed_file.py: edit that file, not this one. */\n' %
                src.rsplit('/', 1)[-1])
        f.write('#include <stddef.h>\n\n')
        f.write('static const unsigned char %s[] = {\n%s\n  0x00};\n' % (name, '\n'.join(lines)))
        f.write('static const size_t %s_len = %d;\n' % (name, len(data)))


if __name__ == '__main__':
    main()
