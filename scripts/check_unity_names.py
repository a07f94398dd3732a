#!/usr/bin/env python3
"""Names local to a file must be unique within a unity-built library (cmake/npuc.cmake, NPUC_UNITY).

Usage: check_unity_names.py LIST_FILE
LIST_FILE has one line per library: `target: file.cpp file.cpp ...` (absolute paths; tests/CMakeLists.txt writes it
from the per-layer libraries' sources). A name defined at file level (column 0: functions, structs, classes, enums,
aliases) in two files of one library is reported: in one unity batch the second is a redefinition, or worse another
overload that calls in the other file may pick without a word. A declaration of a function another file defines (a
line ending in ';') is not a definition and is not counted. Exit 1 when something is reported.
"""
import collections
import re
import sys

DEF = re.compile(r'^(?:static\s+|inline\s+|constexpr\s+|\[\[[^\]]*\]\]\s*)*(?:template\s*<[^>]*>\s*)?'
                 r'[A-Za-z_][\w:<>,\s*&]*?[\s*&]([A-Za-z_]\w*)\s*\(')
TYPE = re.compile(r'^(?:struct|class|enum(?:\s+class)?|using)\s+([A-Za-z_]\w*)\s*[^;]*$')
SKIP = {'if', 'for', 'while', 'switch', 'return', 'main', 'operator', 'namespace'}


def definitions(path):
    """File-level names defined in `path` (column 0, not a declaration)."""
    names = set()
    for line in open(path, encoding='utf-8'):
        if not line or line[0] in ' \t#/}{\n':
            continue
        code = line.split('//', 1)[0].rstrip()
        if code.endswith(';') and '{' not in line and not line.startswith(('using', 'struct', 'class', 'enum')):
            continue  # a function declared here, defined elsewhere
        m = TYPE.match(code) or DEF.match(code)
        if m and m.group(1) not in SKIP:
            names.add(m.group(1))
    return names


def main():
    bad = 0
    for row in open(sys.argv[1], encoding='utf-8'):
        if ':' not in row:
            continue
        target, files = row.split(':', 1)
        where = collections.defaultdict(list)
        for f in files.split():
            if f.endswith(('.cpp', '.cc')):
                for n in definitions(f):
                    where[n].append(f)
        for n, fs in sorted(where.items()):
            if len(fs) > 1:
                bad += 1
                print(f'{target}: {n} is defined at file level in {len(fs)} files of one unity-built library: '
                      + ', '.join(fs) + ' (rename one, or share it through a header)')
    if bad:
        return 1
    print('unity names: every file-level name is unique within its library')
    return 0


if __name__ == '__main__':
    sys.exit(main())
