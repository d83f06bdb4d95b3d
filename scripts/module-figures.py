#!/usr/bin/env python3
# Figures of the tree for issue 58's closing note: files per module (src/ and include/), apps/baton's lines,
# the public headers' count and lines, the longest functions of src/ and apps/ (a top-level function head
# to its closing brace at column 0). Run on any checkout: scripts/module-figures.py [TREE].
import collections, glob, os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 else "."
os.chdir(root)
files = collections.Counter()
for f in glob.glob('src/*/**/*.*', recursive=True) + glob.glob('include/baton/*/**/*.h', recursive=True):
    if f.endswith(('.cpp', '.h')):
        files[f.split('/')[1] if f.startswith('src') else f.split('/')[2]] += 1
print('files per module:', ' '.join(f'{k} {v}' for k, v in sorted(files.items())))
apps = sum(sum(1 for _ in open(f)) for f in glob.glob('apps/baton/*.*'))
print('apps/baton lines:', apps)
hdrs = glob.glob('include/**/*.h', recursive=True)
print('public headers:', len(hdrs), 'lines:', sum(sum(1 for _ in open(f)) for f in hdrs))
# longest functions: a line at column 0 ending in '{' that is a function head, to its closing '}' at column 0
longest = []
for f in glob.glob('src/**/*.cpp', recursive=True) + glob.glob('apps/**/*.cpp', recursive=True):
    lines = open(f, errors='replace').read().split('\n')
    start = None
    for i, l in enumerate(lines):
        if start is None and re.match(r'^[A-Za-z].*\)\s*(const)?\s*(noexcept)?\s*(override)?\s*\{\s*$', l) and not l.startswith(('namespace', 'struct', 'class', 'enum')):
            start = i; name = re.sub(r'\(.*', '', l).split()[-1]
        elif start is not None and l == '}':
            longest.append((i - start + 1, f, name)); start = None
longest.sort(reverse=True)
print('longest functions:', '; '.join(f'{n} {name} ({f})' for n, f, name in longest[:5]))
print('functions over 60 lines:', sum(1 for n, _, _ in longest if n > 60))
