#!/usr/bin/env python3
"""embed.py IN OUT SYMBOL - write IN as a C byte array SYMBOL (NUL-terminated) and SYMBOL_len."""
import sys

data = open(sys.argv[1], 'rb').read()
sym = sys.argv[3]
with open(sys.argv[2], 'w') as out:
    out.write('/* generated from %s by embed.py */\n' % sys.argv[1].split('/')[-1])
    out.write('const char %s[] = {\n' % sym)
    for i in range(0, len(data), 16):
        out.write('  ' + ', '.join('0x%02x' % b for b in data[i:i + 16]) + ',\n')
    out.write('  0x00\n};\n')
    out.write('const unsigned long %s_len = %d;\n' % (sym, len(data)))
