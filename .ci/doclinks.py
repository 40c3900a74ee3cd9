#!/usr/bin/env python3
"""Checks the HTML that rustdoc wrote for links that lead nowhere.

Each library crate is documented alone (`cargo doc --no-deps -p <crate>` into an empty
target directory), as a user or docs.rs may do in any order. rustdoc's own lint cannot see
what this finds: a link to another crate's item resolves, but when that crate's docs are
not beside it rustdoc writes the path itself as the address, or leaves the brackets in
the text. Usage: doclinks.py <doc-dir>; exits 1 and lists each problem.
"""
import os
import re
import sys
import urllib.parse

root = sys.argv[1]
problems = set()
for dirpath, _, files in os.walk(root):
    for name in files:
        if not name.endswith(".html"):
            continue
        path = os.path.join(dirpath, name)
        rel = os.path.relpath(path, root)
        if rel.startswith(("src/", "static.files/")) or "/" not in rel:
            continue
        text = open(path, encoding="utf-8", errors="replace").read()
        for href in re.findall(r'href="([^"#?]*)(?:[#?][^"]*)?"', text):
            if not href or href.startswith(("http:", "https:", "mailto:", "javascript:")):
                continue
            if "${" in href:
                continue
            target = os.path.normpath(os.path.join(dirpath, urllib.parse.unquote(href)))
            # Pages of other crates are not written when a crate is documented alone;
            # rustdoc then leaves such links out, so a relative path to one is its own.
            if not os.path.exists(target) and os.path.relpath(target, root).split("/")[0] == rel.split("/")[0]:
                problems.add(f"{rel}: link to {href} leads nowhere")
            if "::" in href:
                problems.add(f"{rel}: a Rust path written as an address: {href}")
        for left in re.findall(r"\[<code>([^<]*)</code>\]", text):
            problems.add(f"{rel}: unresolved link text [{left}]")
for p in sorted(problems):
    print(p)
sys.exit(1 if problems else 0)
