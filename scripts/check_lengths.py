#!/usr/bin/python3
"""Lists every source file over 800 lines and every function over 150 lines (issue 48: "no file a reader has to
scroll through"), except those ALLOWED below says why; exits 1 when anything else exceeds a limit.

    /usr/bin/python3 scripts/check_lengths.py [--all] [ROOT]

--all also lists the allowed ones (marked "allowed: <why>"). Scanned: src/, tools/npuc/, python/*.cpp and include/
(.cpp .hpp .h .inc; the .def tables count as files only). Standard library only, so it runs wherever the build does.

How a function is found, without a compiler: comments, string and character literals (raw strings included) and
preprocessor lines are blanked out first; then every `{` is classed by what stands before it since the last `;`,
`{` or `}`. At namespace or class scope a block is a function body when that declaration has a parameter list and
no top-level `=` (so tables `kFoo[] = {...}` are not functions), and the `{` follows the `)` or a qualifier
(`const`, `noexcept`, `override`, a trailing return type, a constructor's initialiser list); a lambda is a block
after `](...)` or `]` anywhere. A function's length runs from the first line of its declaration (the lambda's
capture list) to its closing brace; a lambda counts on its own and also inside the function that holds it.
"""
import os
import re
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150

# The exceptions, each with why. A key is a path relative to the root; one ending in "/" covers the folder; a key
# "path:name" covers only that function of the file (name as the report prints it). "to split" means it is over the
# limit only because nobody has split it yet: the entry goes when that is done.
ALLOWED = {
    # Generated code: the source text of the test harness `npuc custom-op create` writes, one format string.
    "src/driver/custom_op_gen.cpp:harness": "generated code (the harness's C++ source as one format string)",
    # Tables: one entry per op schema (name, arity, doc, shape function), read one op at a time.
    "src/ops/nn.cpp:registerNnOps": "a table of op schemas",
    "src/ops/quant_ops.cpp:registerQuantNpucOps": "a table of op schemas",
    "src/ops/tensor_ops.cpp:registerTensorOps": "a table of op schemas",
}

SCANNED_DIRS = ["src", "tools/npuc", "include"]
SOURCE_EXTS = (".cpp", ".hpp", ".h", ".inc")
TABLE_EXTS = (".def",)

QUALIFIERS = {"const", "noexcept", "override", "final", "mutable", "volatile", "&", "&&", "try", "constexpr"}
CLASS_KEYWORDS = {"class", "struct", "union", "enum"}


def blank_until(text, start, found, closer, out):
    """Blanks text[start:] up to and including a closer of `closer` characters found at `found` (-1: to the end),
    keeping newlines; returns where scanning goes on."""
    end = len(text) if found < 0 else found + closer
    out.append(re.sub(r"[^\n]", " ", text[start:end]))
    return end


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept, so line numbers
    hold)."""
    out = []
    i, n = 0, len(text)
    line_start = True  # only white space since the last newline: a '#' there starts a directive
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            line_start = True
            continue
        if line_start and c == "#":
            # A directive, with its continuation lines; its comments end with it or are skipped the same way.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                if text.startswith("/*", i):
                    i = blank_until(text, i, text.find("*/", i + 2), 2, out)
                    continue
                out.append(" ")
                i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        if text.startswith("/*", i):
            i = blank_until(text, i, text.find("*/", i + 2), 2, out)
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ \t\n]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            i = blank_until(text, i, text.find(close, i + raw.end()), len(close), out)
            continue
        if c in "\"'":
            # A digit separator (1'000'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and re.match(r"[0-9A-Fa-f]", text[i + 1:i + 2] or " ") \
                    and re.search(r"\b[0-9][0-9A-Fa-fxXbB']*$", text[max(0, i - 40):i]):
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            out.append(" " * (end - i))
            i = end
            continue
        out.append(c)
        i += 1
    return "".join(out)


TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|->|&&|[0-9][0-9A-Za-z_.']*|\S")


def tokens(code):
    """(text, line) of every token."""
    line = 1
    pos = 0
    for m in TOKEN.finditer(code):
        line += code.count("\n", pos, m.start())
        pos = m.start()
        yield m.group(), line


def matching_open(toks, close_idx, open_ch, close_ch, lower):
    """Index of the bracket that the one at close_idx closes, searching back no further than lower; None if none."""
    depth = 0
    for k in range(close_idx, lower - 1, -1):
        t = toks[k][0]
        if t == close_ch:
            depth += 1
        elif t == open_ch:
            depth -= 1
            if depth == 0:
                return k
    return None


def strip_template_prefix(stmt):
    """The declaration without its leading `template <...>` clauses (their `=` and `class` are not the
    declaration's)."""
    k = 0
    while k < len(stmt) and stmt[k][0] == "template" and k + 1 < len(stmt) and stmt[k + 1][0] == "<":
        depth, j = 0, k + 1
        while j < len(stmt):
            t = stmt[j][0]
            depth += t == "<"
            depth -= t == ">"
            if depth == 0:
                break
            j += 1
        k = j + 1
    return stmt[k:]


def classify(toks, brace_idx, stmt_start, block_start):
    """What the `{` at brace_idx opens, from the tokens of its declaration (stmt_start..brace_idx-1; a lambda's
    capture list may stand further back, in the enclosing block from block_start): ("namespace"|"class"|"function"|
    "lambda"|"block", name, first line)."""
    stmt = toks[stmt_start:brace_idx]
    prev = stmt[-1][0] if stmt else ""
    # A lambda: `[...] {`, `[...](...) {`, with specifiers or a trailing return type between.
    k = brace_idx - 1
    while k >= block_start and toks[k][0] in QUALIFIERS:
        k -= 1
    arrow = None
    for j in range(brace_idx - 1, max(block_start, brace_idx - 12) - 1, -1):
        if toks[j][0] == "->":
            arrow = j
            break
        if toks[j][0] in (")", "(", "]", "[", ";", "{", "}"):
            break
    if arrow is not None:
        k = arrow - 1
        while k >= block_start and toks[k][0] in QUALIFIERS:
            k -= 1
    if k >= block_start and toks[k][0] == ")":
        open_paren = matching_open(toks, k, "(", ")", block_start)
        if open_paren is not None and open_paren - 1 >= block_start and toks[open_paren - 1][0] == "]":
            k = open_paren - 1
    if k >= block_start and toks[k][0] == "]":
        open_bracket = matching_open(toks, k, "[", "]", block_start)
        if open_bracket is not None:
            before = toks[open_bracket - 1][0] if open_bracket > 0 else ""
            # `a[i] {` is not a lambda: a capture list follows an operator or an opening, not a name.
            if not (re.match(r"[A-Za-z0-9_)\]]", before) and before not in ("return", "co_return")):
                return "lambda", None, toks[open_bracket][1]
    if not stmt:
        return "block", None, toks[brace_idx][1]
    decl = strip_template_prefix(stmt)
    words = [t for t, _ in decl]
    if words[:1] == ["namespace"] or words[:1] == ["extern"] or (words[:1] == ["inline"] and "namespace" in words[:2]):
        return "namespace", None, stmt[0][1]
    # A class key before the parameter list (`struct Foo : Base<decltype(x)> {`) makes it a class, enum or union.
    first_paren = words.index("(") if "(" in words else len(words)
    if any(w in CLASS_KEYWORDS for w in words[:first_paren]):
        return "class", None, stmt[0][1]
    if "(" not in words:
        return "block", None, stmt[0][1]
    # A top-level `=` (not an operator's name, not inside parentheses or brackets) makes it data.
    depth = 0
    for j, w in enumerate(words[:first_paren + 1]):
        if w in "([":
            depth += 1
        elif w in ")]":
            depth -= 1
        elif w == "=" and depth == 0 and not (j > 0 and words[j - 1] in ("operator", "=", "!", "<", ">", "+", "-",
                                                                              "*", "/", "%", "&", "|", "^")):
            return "block", None, stmt[0][1]
    ok = prev == ")" or prev in QUALIFIERS or "->" in words[first_paren:]
    if not ok and prev == "}":
        ok = ":" in words[first_paren:]  # a constructor whose initialiser list ends with a braced one
    if not ok:
        return "block", None, stmt[0][1]
    # The name: what stands before the parameter list (an operator's name is `operator` and its symbol).
    j = first_paren - 1
    if j >= 1 and words[j - 1] == "operator":
        name = "operator" + words[j]
    elif words[j] == ")" and "operator" in words[:j]:
        name = "operator()"
    else:
        name = words[j]
        while j >= 2 and words[j - 1] == "::":
            name = words[j - 2] + "::" + name
            j -= 2
        if j >= 1 and words[j - 1] == "~":
            name = "~" + name
    return "function", name, decl[0][1]


def scan(path, code):
    """(name, first line, last line) of every function and lambda of the file."""
    toks = list(tokens(code))
    found = []
    # The open blocks: (kind, name, first line, index of the token after the `{`). A declaration starts after the
    # last `;` (outside parentheses: `for (;;)` ends nothing), `{`, `}` or access specifier.
    stack = []
    stmt_start = 0
    depth = 0
    for i, (t, line) in enumerate(toks):
        if t == "{":
            block_start = stack[-1][3] if stack else 0
            kind, name, first = classify(toks, i, stmt_start, block_start)
            in_code = any(k in ("function", "lambda") for k, *_ in stack)
            if kind == "function" and in_code:
                kind = "block"  # a control statement, or a local class's member, inside a function
            if kind == "lambda":
                outer = next((n for k, n, *_ in reversed(stack) if k == "function"), None)
                name = "lambda in " + outer if outer else "lambda"
            stack.append((kind, name, first, i + 1, depth))
            depth = 0
            stmt_start = i + 1
        elif t == "}":
            if stack:
                kind, name, first, _, depth = stack.pop()
                if kind in ("function", "lambda"):
                    found.append((name, first, line))
            stmt_start = i + 1
        elif t in "([":
            depth += 1
        elif t in ")]":
            depth -= 1
        elif t == ";" and depth == 0:
            stmt_start = i + 1
        elif t == ":" and i > 0 and toks[i - 1][0] in ("public", "private", "protected"):
            stmt_start = i + 1
    if stack:
        print(f"{path}: warning: {len(stack)} unclosed block(s) (unbalanced braces across #if branches?)",
              file=sys.stderr)
    return found


def allowed_reason(rel, name=None):
    for key, why in ALLOWED.items():
        if ":" in key:
            path, func = key.split(":", 1)
            if name is not None and path == rel and func == name:
                return why
        elif rel == key or (key.endswith("/") and rel.startswith(key)):
            return why
    return None


def files(root):
    for d in SCANNED_DIRS:
        for base, dirs, names in os.walk(os.path.join(root, d)):
            dirs.sort()
            for n in sorted(names):
                if n.endswith(SOURCE_EXTS + TABLE_EXTS):
                    yield os.path.relpath(os.path.join(base, n), root)
    py = os.path.join(root, "python")
    if os.path.isdir(py):
        for n in sorted(os.listdir(py)):
            if n.endswith(".cpp"):
                yield os.path.join("python", n)


def main(argv):
    show_all = "--all" in argv
    args = [a for a in argv if a != "--all"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = 0
    for rel in files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        reports = []
        if n > MAX_FILE_LINES:
            reports.append((f"{rel}: {n} lines (limit {MAX_FILE_LINES})", allowed_reason(rel)))
        if rel.endswith(SOURCE_EXTS):
            for name, first, last in scan(rel, blank(text)):
                length = last - first + 1
                if length > MAX_FUNCTION_LINES:
                    reports.append((f"{rel}:{first}: {name}: {length} lines (limit {MAX_FUNCTION_LINES})",
                                    allowed_reason(rel, name)))
        for msg, why in dict.fromkeys(reports):  # two lambdas that open on one line print once
            if why is None:
                print(msg)
                bad = 1
            elif show_all:
                print(f"{msg} — allowed: {why}")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
