// Markdown for model answers, built with DOM calls only: the text is never parsed as HTML, so
// whatever a model writes (<script>, <img onerror>, javascript: links) ends up as text nodes
// or, for links, as an href that has been checked to be http or https.
//
// What it reads: paragraphs (single newlines kept as line breaks), ATX headings, emphasis,
// strong, strikethrough, inline code, fenced code blocks (an unclosed fence, as a streamed
// answer has, is a code block to the end), lists (ordered, unordered, nested), links and bare
// http(s) URLs, blockquotes, GitHub tables and horizontal rules. LaTeX ($…$, $$…$$, \(…\),
// \[…\]) is kept as written, untouched by emphasis or escapes. Images become links: a model's
// answer never makes the page load anything.
"use strict";

const HearthMarkdown = (() => {
  // -------------------------------------------------------------------------------------------
  // Blocks

  const FENCE_OPEN = /^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  const RULE = /^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$/;
  const QUOTE = /^ {0,3}> ?(.*)$/;
  const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
  const TABLE_DELIMITER = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
  const MATH_OPEN = /^ {0,3}(\$\$|\\\[)/;

  const isBlank = (line) => /^[ \t]*$/.test(line);
  const indentOf = (line) => /^ */.exec(line)[0].length;

  function isTableStart(lines, i) {
    return i + 1 < lines.length && lines[i].includes("|") && lines[i + 1].includes("|") && TABLE_DELIMITER.test(lines[i + 1]);
  }

  // A display-math block: "$$" or "\[" on a line that does not also close it.
  function mathClose(line) {
    const open = MATH_OPEN.exec(line);
    if (!open) return null;
    const close = open[1] === "$$" ? "$$" : "\\]";
    const rest = line.slice(open[0].length);
    return rest.includes(close) ? null : close;
  }

  // Whether a line begins a block other than a paragraph (and so ends a paragraph).
  function startsBlock(lines, i) {
    const line = lines[i];
    return FENCE_OPEN.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line)
      || isTableStart(lines, i) || mathClose(line) !== null;
  }

  // Splits lines into blocks: {type, start, end, …}, start and end being line indices.
  function parseBlocks(lines) {
    const blocks = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      const start = i;
      if (isBlank(line)) {
        i += 1;
        continue;
      }
      let match;
      if ((match = FENCE_OPEN.exec(line))) {
        const indent = match[1].length;
        const fence = match[2];
        const closing = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}[ \\t]*$`);
        const code = [];
        i += 1;
        let open = true;
        while (i < lines.length) {
          if (closing.test(lines[i])) {
            open = false;
            i += 1;
            break;
          }
          code.push(lines[i].replace(new RegExp(`^ {0,${indent}}`), ""));
          i += 1;
        }
        // An unclosed fence (an answer still streaming) ends at the text's end, without the
        // empty line a final newline leaves.
        if (open) while (code.length && isBlank(code[code.length - 1])) code.pop();
        blocks.push({ type: "code", language: match[3].toLowerCase(), code: code.join("\n"), open, start, end: i });
        continue;
      }
      if ((match = HEADING.exec(line))) {
        blocks.push({ type: "heading", level: match[1].length, text: match[2] || "", start, end: i + 1 });
        i += 1;
        continue;
      }
      if (RULE.test(line)) {
        blocks.push({ type: "rule", start, end: i + 1 });
        i += 1;
        continue;
      }
      const close = mathClose(line);
      if (close !== null) {
        const text = [line];
        i += 1;
        while (i < lines.length) {
          text.push(lines[i]);
          i += 1;
          if (lines[i - 1].includes(close)) break;
        }
        blocks.push({ type: "math", text: text.join("\n"), start, end: i });
        continue;
      }
      if (QUOTE.test(line)) {
        const inner = [];
        while (i < lines.length && (match = QUOTE.exec(lines[i]))) {
          inner.push(match[1]);
          i += 1;
        }
        blocks.push({ type: "quote", children: parseBlocks(inner), start, end: i });
        continue;
      }
      if (ITEM.test(line)) {
        const list = parseList(lines, i);
        blocks.push({ ...list.block, start, end: list.next });
        i = list.next;
        continue;
      }
      if (isTableStart(lines, i)) {
        const header = cells(line);
        const align = cells(lines[i + 1]).map((cell) => {
          const left = cell.startsWith(":");
          const right = cell.endsWith(":");
          return left && right ? "center" : right ? "right" : left ? "left" : "";
        });
        const rows = [];
        i += 2;
        while (i < lines.length && !isBlank(lines[i]) && lines[i].includes("|")) {
          rows.push(cells(lines[i]));
          i += 1;
        }
        blocks.push({ type: "table", header, align, rows, start, end: i });
        continue;
      }
      const text = [line];
      i += 1;
      while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines, i)) {
        text.push(lines[i]);
        i += 1;
      }
      blocks.push({ type: "paragraph", text: text.join("\n"), start, end: i });
    }
    return blocks;
  }

  // A list from lines[start]: its items are parsed as blocks of their own, so a nested list,
  // a code block or a second paragraph inside an item works as it does at the top.
  function parseList(lines, start) {
    const first = ITEM.exec(lines[start]);
    const indent = first[1].length;
    const ordered = /\d/.test(first[2]);
    const items = [];
    let loose = false;
    let i = start;
    const sameList = (match) => match && match[1].length === indent && /\d/.test(match[2]) === ordered;
    while (i < lines.length) {
      const match = ITEM.exec(lines[i]);
      if (!sameList(match)) break;
      const contentIndent = indent + match[2].length + 1;
      const content = [match[3] || ""];
      i += 1;
      while (i < lines.length) {
        const line = lines[i];
        if (isBlank(line)) {
          let next = i;
          while (next < lines.length && isBlank(lines[next])) next += 1;
          // After a blank line, only indented lines still belong to the item.
          if (next < lines.length && indentOf(lines[next]) > indent) {
            for (; i < next; i += 1) content.push("");
            loose = true;
            continue;
          }
          break;
        }
        const spaces = indentOf(line);
        if (spaces > indent) {
          content.push(line.slice(Math.min(spaces, contentIndent)));
        } else if (ITEM.test(line) || startsBlock(lines, i)) {
          break;
        } else {
          content.push(line); // a paragraph's lazy continuation
        }
        i += 1;
      }
      items.push(parseBlocks(content));
      if (i < lines.length && isBlank(lines[i])) {
        let next = i;
        while (next < lines.length && isBlank(lines[next])) next += 1;
        if (next < lines.length && sameList(ITEM.exec(lines[next]))) {
          loose = true;
          i = next;
          continue;
        }
        break;
      }
    }
    return { block: { type: "list", ordered, first: ordered ? parseInt(first[2], 10) : 1, items, loose }, next: i };
  }

  // The cells of a table row: split on pipes that are neither escaped nor inside code.
  function cells(row) {
    let text = row.trim();
    if (text.startsWith("|")) text = text.slice(1);
    if (text.endsWith("|") && !text.endsWith("\\|")) text = text.slice(0, -1);
    const result = [];
    let cell = "";
    let code = 0;
    for (let i = 0; i < text.length; i += 1) {
      const c = text[i];
      if (c === "\\" && text[i + 1] === "|") {
        cell += "|";
        i += 1;
      } else if (c === "`") {
        const run = /^`+/.exec(text.slice(i))[0];
        code = code === run.length ? 0 : code || run.length;
        cell += run;
        i += run.length - 1;
      } else if (c === "|" && !code) {
        result.push(cell.trim());
        cell = "";
      } else {
        cell += c;
      }
    }
    result.push(cell.trim());
    return result;
  }

  // -------------------------------------------------------------------------------------------
  // Inline text

  const ESCAPABLE = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

  // How many times `text[i]` repeats from i on.
  function runLength(text, i) {
    let end = i;
    while (text[end] === text[i]) end += 1;
    return end - i;
  }

  // The match of a sticky (y) pattern at i, or null.
  function matchAt(pattern, text, i) {
    pattern.lastIndex = i;
    return pattern.exec(text);
  }

  // Text with its newlines as line breaks.
  function appendText(parent, text) {
    const lines = text.split("\n");
    lines.forEach((line, index) => {
      if (index) parent.append(document.createElement("br"));
      if (line) parent.append(document.createTextNode(line));
    });
  }

  // The destination only when it is an absolute http(s) URL, else null.
  function safeUrl(destination) {
    try {
      const url = new URL(destination.trim());
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch (_) {
      return null;
    }
  }

  function linkElement(href, title) {
    const link = document.createElement("a");
    link.href = href;
    link.rel = "noopener noreferrer";
    link.target = "_blank";
    link.title = title || href;
    return link;
  }

  // The end of the backtick run of `length` that closes a code span opened before `from`.
  function closingBackticks(text, from, length) {
    let i = from;
    while ((i = text.indexOf("`", i)) >= 0) {
      const run = runLength(text, i);
      if (run === length) return i;
      i += run;
    }
    return -1;
  }

  const LINK_TAIL = /[ \t]*(?:<([^<>\n]*)>|((?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*))(?:[ \t]+(?:"([^"]*)"|'([^']*)'))?[ \t]*\)/y;

  // [text](destination "title") at `start`: {label, destination, title, end}, or null.
  function parseLink(text, start) {
    let depth = 0;
    let i = start;
    for (; i < text.length; i += 1) {
      const c = text[i];
      if (c === "\\") {
        i += 1;
      } else if (c === "`") {
        const run = runLength(text, i);
        const close = closingBackticks(text, i + run, run);
        i = close >= 0 ? close + run - 1 : i + run - 1;
      } else if (c === "[") {
        depth += 1;
      } else if (c === "]") {
        depth -= 1;
        if (depth === 0) break;
      }
    }
    if (depth !== 0 || text[i + 1] !== "(") return null;
    const label = text.slice(start + 1, i);
    const match = matchAt(LINK_TAIL, text, i + 2);
    if (!match) return null;
    const destination = match[1] !== undefined ? match[1] : match[2];
    return { label, destination, title: match[3] || match[4] || "", end: i + 2 + match[0].length };
  }

  // Where the delimiter that closes emphasis opened with `delimiter` before `from` is, or -1.
  function closingDelimiter(text, from, delimiter) {
    const c = delimiter[0];
    let i = from;
    while (i < text.length) {
      if (text[i] === "\\") {
        i += 2;
        continue;
      }
      if (text[i] === "`") {
        const run = runLength(text, i);
        const close = closingBackticks(text, i + run, run);
        i = close >= 0 ? close + run : i + run;
        continue;
      }
      if (text[i] === c) {
        const run = runLength(text, i);
        const before = text[i - 1];
        const after = text[i + run];
        const closes = run >= delimiter.length && before !== undefined && !/\s/.test(before)
          && (c !== "_" || after === undefined || !/[\p{L}\p{N}]/u.test(after));
        // A single delimiter is not closed by a double one, which is emphasis of its own.
        if (closes && (delimiter.length > 1 || run === 1 || run === 3)) {
          return i + run - delimiter.length;
        }
        i += run;
        continue;
      }
      i += 1;
    }
    return -1;
  }

  const MATH_INLINE = [
    /\$\$[\s\S]+?\$\$/y,
    /\$(?=\S)[^$\n]*?\S\$(?!\d)|\$\S\$(?!\d)/y,
    /\\\([\s\S]+?\\\)/y,
    /\\\[[\s\S]+?\\\]/y,
  ];
  const AUTOLINK = /<(https?:\/\/[^\s<>]+)>/iy;
  const BARE_URL = /https?:\/\/[^\s<>"'`]+/iy;

  // Appends the inline content of `text` to `parent`; links are left out inside a link.
  function appendInline(parent, text, inLink = false) {
    let plain = "";
    const flush = () => {
      if (plain) appendText(parent, plain);
      plain = "";
    };
    let i = 0;
    while (i < text.length) {
      const c = text[i];

      if (c === "$" || (c === "\\" && (text[i + 1] === "(" || text[i + 1] === "["))) {
        const math = MATH_INLINE.map((pattern) => matchAt(pattern, text, i)).find(Boolean);
        if (math) {
          plain += math[0];
          i += math[0].length;
          continue;
        }
      }
      if (c === "\\") {
        const next = text[i + 1];
        if (next !== undefined && ESCAPABLE.includes(next)) {
          plain += next;
          i += 2;
        } else {
          plain += c;
          i += 1;
        }
        continue;
      }
      if (c === "`") {
        const run = "`".repeat(runLength(text, i));
        const close = closingBackticks(text, i + run.length, run.length);
        if (close >= 0) {
          flush();
          let content = text.slice(i + run.length, close).replace(/\n/g, " ");
          if (/^ .*[^ ].* $/.test(content)) content = content.slice(1, -1);
          const code = document.createElement("code");
          code.textContent = content;
          parent.append(code);
          i = close + run.length;
        } else {
          plain += run;
          i += run.length;
        }
        continue;
      }
      if (!inLink && (c === "[" || (c === "!" && text[i + 1] === "["))) {
        const image = c === "!";
        const link = parseLink(text, image ? i + 1 : i);
        if (link) {
          const href = safeUrl(link.destination);
          if (href) {
            flush();
            const anchor = linkElement(href, link.title);
            // An image is shown as a link to it, named by its description.
            if (image) anchor.classList.add("image-link");
            appendInline(anchor, image ? link.label || href : link.label, true);
            parent.append(anchor);
          } else {
            // Not a web address (javascript:, data:, a relative path): the source, as text.
            plain += text.slice(i, link.end);
          }
          i = link.end;
          continue;
        }
      }
      if (!inLink && c === "<") {
        const autolink = matchAt(AUTOLINK, text, i);
        const href = autolink && safeUrl(autolink[1]);
        if (href) {
          flush();
          const anchor = linkElement(href);
          anchor.textContent = autolink[1];
          parent.append(anchor);
          i += autolink[0].length;
          continue;
        }
      }
      if (!inLink && (c === "h" || c === "H") && !/[\p{L}\p{N}]/u.test(text[i - 1] || "")) {
        const bare = matchAt(BARE_URL, text, i);
        if (bare) {
          let url = bare[0].replace(/[.,:;!?*_~]+$/, "");
          // A closing parenthesis belongs to the URL only when it opened one: (see https://x.y/a_(b)).
          while (url.endsWith(")") && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) url = url.slice(0, -1);
          const href = safeUrl(url);
          if (href) {
            flush();
            const anchor = linkElement(href);
            anchor.textContent = url;
            parent.append(anchor);
            i += url.length;
            continue;
          }
        }
      }
      if (c === "*" || c === "_" || c === "~") {
        const run = c.repeat(runLength(text, i));
        const before = text[i - 1];
        const after = text[i + run.length];
        const opens = after !== undefined && !/\s/.test(after)
          && (c !== "_" || before === undefined || !/[\p{L}\p{N}]/u.test(before))
          && (c !== "~" || run.length === 2);
        if (opens) {
          const candidates = run.length >= 3 && c !== "~" ? [3, 2, 1] : run.length === 2 ? [2, 1] : [1];
          let done = false;
          for (const length of candidates) {
            if (c === "~" && length !== 2) continue;
            const delimiter = c.repeat(length);
            const close = closingDelimiter(text, i + length, delimiter);
            if (close > i + length) {
              flush();
              let outer;
              let inner;
              if (c === "~") {
                outer = inner = document.createElement("del");
              } else if (length === 3) {
                outer = document.createElement("strong");
                inner = document.createElement("em");
                outer.append(inner);
              } else {
                outer = inner = document.createElement(length === 2 ? "strong" : "em");
              }
              appendInline(inner, text.slice(i + length, close), inLink);
              parent.append(outer);
              i = close + length;
              done = true;
              break;
            }
          }
          if (done) continue;
        }
        plain += run;
        i += run.length;
        continue;
      }
      plain += c;
      i += 1;
    }
    flush();
  }

  // -------------------------------------------------------------------------------------------
  // Code: a small tokenizer per family of languages, for keywords, strings, comments, numbers
  // and calls. It only ever wraps runs of the code's own text in spans.

  const words = (list) => new Set(list.split(" "));
  const C_FAMILY = { line: ["//"], block: [["/*", "*/"]], strings: ['"', "'"] };
  const FAMILIES = [
    [["js", "javascript", "jsx", "mjs", "cjs", "ts", "typescript", "tsx"], {
      ...C_FAMILY, strings: ['"', "'", "`"],
      keywords: words("async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof interface let new of return static super switch this throw try type typeof var void while yield enum implements private protected public readonly as"),
      literals: words("true false null undefined NaN Infinity"),
    }],
    [["json", "jsonc", "json5"], { line: ["//"], block: [], strings: ['"'], keywords: words(""), literals: words("true false null") }],
    [["py", "python", "python3"], {
      line: ["#"], block: [], strings: ['"""', "'''", '"', "'"],
      keywords: words("and as assert async await break class continue def del elif else except finally for from global if import in is lambda match case nonlocal not or pass raise return try while with yield self"),
      literals: words("True False None"),
    }],
    [["swift"], {
      ...C_FAMILY, strings: ['"""', '"'],
      keywords: words("actor any as associatedtype async await break case catch class continue default defer deinit do else enum extension fallthrough fileprivate for func guard if import in init inout internal is let mutating nonisolated open operator private protocol public repeat rethrows return self Self some static struct subscript super switch throw throws try typealias var where while"),
      literals: words("true false nil"),
    }],
    [["c", "h", "cpp", "c++", "cc", "hpp", "cxx", "objc", "objective-c", "cuda"], {
      ...C_FAMILY, preprocessor: true,
      keywords: words("auto bool break case catch char class const constexpr continue default delete do double else enum explicit extern float for friend goto if inline int long namespace new noexcept operator private protected public register return short signed sizeof static struct switch template this throw try typedef typename union unsigned using virtual void volatile while"),
      literals: words("true false NULL nullptr"),
    }],
    [["java", "kotlin", "kt", "scala", "cs", "csharp", "c#", "dart"], {
      ...C_FAMILY, strings: ['"""', '"', "'"],
      keywords: words("abstract as async await boolean break byte case catch char class const continue data default do double else enum extends final finally float for fun if implements import in int interface internal is long namespace new object open override package private protected public return sealed short static string super switch this throw throws try val var void when while using"),
      literals: words("true false null"),
    }],
    [["go", "golang"], {
      ...C_FAMILY, strings: ['"', "'", "`"],
      keywords: words("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var"),
      literals: words("true false nil iota"),
    }],
    [["rust", "rs"], {
      ...C_FAMILY, strings: ['"'],
      keywords: words("as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while"),
      literals: words("true false None Some Ok Err"),
    }],
    [["sh", "bash", "shell", "zsh", "console", "shellsession"], {
      line: ["#"], block: [], strings: ['"', "'"],
      keywords: words("if then else elif fi for while until do done case esac function in return export local set unset echo exit source alias sudo cd"),
      literals: words("true false"),
    }],
    [["sql", "mysql", "postgresql", "sqlite"], {
      line: ["--"], block: [["/*", "*/"]], strings: ["'", '"'], caseless: true,
      keywords: words("select from where and or not insert into values update set delete create table drop alter index view join left right inner outer on group by order having limit offset as distinct union all primary key foreign references default begin commit rollback transaction case when then else end is in like between exists"),
      literals: words("null true false"),
    }],
    [["rb", "ruby"], {
      line: ["#"], block: [], strings: ['"', "'"],
      keywords: words("alias and begin break case class def defined do else elsif end ensure for if in module next not or redo rescue retry return self super then undef unless until when while yield require puts"),
      literals: words("true false nil"),
    }],
    [["php"], {
      ...C_FAMILY, line: ["//", "#"],
      keywords: words("abstract and array as break case catch class const continue declare default do echo else elseif empty extends final for foreach function global if implements include interface isset new private protected public require return static switch throw trait try use var while"),
      literals: words("true false null"),
    }],
    [["css", "scss", "less"], { line: [], block: [["/*", "*/"]], strings: ['"', "'"], keywords: words("important media import from to"), literals: words("") }],
    [["yaml", "yml", "toml", "ini", "dockerfile", "makefile", "make", "r"], {
      line: ["#"], block: [], strings: ['"', "'"], keywords: words(""), literals: words("true false null yes no"),
    }],
    [["html", "xml", "svg", "vue", "xhtml"], { markup: true }],
  ];
  const LANGUAGES = new Map(FAMILIES.flatMap(([names, rules]) => names.map((name) => [name, rules])));

  const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const END = "(?![\\s\\S])";

  // One pattern per language, whose groups are comment, preprocessor line, string, number and
  // word: the text between two matches is plain. Made on first use.
  function tokenPattern(rules) {
    if (rules.pattern) return rules.pattern;
    const comments = [
      ...rules.block.map(([open, close]) => `${escapeRegExp(open)}[\\s\\S]*?(?:${escapeRegExp(close)}|${END})`),
      ...rules.line.map((marker) => `${escapeRegExp(marker)}[^\\n]*`),
    ];
    const strings = rules.strings.map((quote) => {
      const q = escapeRegExp(quote);
      if (quote.length === 3) return `${q}[\\s\\S]*?(?:${q}|${END})`;
      // A backtick string may span lines; other quotes end at the line's end if unclosed.
      if (quote === "`") return "`(?:\\\\[\\s\\S]|[^`\\\\])*`?";
      return `${q}(?:\\\\.|[^${q}\\\\\\n])*${q}?`;
    });
    const number = "(?<![\\w$])(?:0[xX][\\da-fA-F_]+|0[bB][01_]+|(?:\\d[\\d_]*\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?)[a-zA-Z%]*";
    const groups = [
      comments.length ? comments.join("|") : "(?!)",
      rules.preprocessor ? "^[ \\t]*#[ \\t]*\\w+" : "(?!)",
      strings.length ? strings.join("|") : "(?!)",
      number,
      "[A-Za-z_$][\\w$]*",
    ];
    rules.pattern = new RegExp(groups.map((group) => `(${group})`).join("|"), "gm");
    return rules.pattern;
  }

  const CALL = /\s*\(/y;

  function span(className, text) {
    const node = document.createElement("span");
    node.className = className;
    node.textContent = text;
    return node;
  }

  function highlight(code, language) {
    const rules = LANGUAGES.get(language);
    if (!rules) return document.createTextNode(code);
    if (rules.markup) return highlightMarkup(code);
    const fragment = document.createDocumentFragment();
    const pattern = tokenPattern(rules);
    pattern.lastIndex = 0;
    let plain = 0;
    let match;
    const emit = (start, end, className) => {
      if (start > plain) fragment.append(document.createTextNode(code.slice(plain, start)));
      fragment.append(span(className, code.slice(start, end)));
      plain = end;
    };
    while ((match = pattern.exec(code))) {
      const [token, comment, preprocessor, string, number] = match;
      const start = match.index;
      const end = start + token.length;
      if (!token) {
        pattern.lastIndex += 1;
        continue;
      }
      if (comment !== undefined) {
        emit(start, end, "tok-comment");
      } else if (preprocessor !== undefined) {
        emit(start, end, "tok-keyword");
      } else if (string !== undefined) {
        emit(start, end, "tok-string");
      } else if (number !== undefined) {
        emit(start, end, "tok-number");
      } else {
        const key = rules.caseless ? token.toLowerCase() : token;
        CALL.lastIndex = end;
        if (rules.keywords.has(key)) emit(start, end, "tok-keyword");
        else if (rules.literals.has(key)) emit(start, end, "tok-literal");
        else if (CALL.test(code)) emit(start, end, "tok-function");
      }
    }
    if (plain < code.length) fragment.append(document.createTextNode(code.slice(plain)));
    return fragment;
  }

  // HTML and XML: comments, tag names, attribute names and quoted values.
  function highlightMarkup(code) {
    const fragment = document.createDocumentFragment();
    const pattern = /<!--[\s\S]*?(?:-->|$)|<\/?[A-Za-z][\w:.-]*|\s[A-Za-z_:][\w:.-]*(?==)|"[^"]*"?|'[^']*'?|\/?>/g;
    let last = 0;
    let inTag = false;
    for (const match of code.matchAll(pattern)) {
      const token = match[0];
      const isString = token[0] === '"' || token[0] === "'";
      const isAttribute = /^\s/.test(token);
      if ((isString || isAttribute || token.endsWith(">")) && !inTag && !token.startsWith("<!--")) continue;
      if (match.index > last) fragment.append(document.createTextNode(code.slice(last, match.index)));
      if (token.startsWith("<!--")) {
        fragment.append(span("tok-comment", token));
      } else if (token.startsWith("<")) {
        fragment.append(span("tok-keyword", token));
        inTag = true;
      } else if (token.endsWith(">")) {
        fragment.append(span("tok-keyword", token));
        inTag = false;
      } else if (isAttribute) {
        fragment.append(document.createTextNode(token[0]), span("tok-function", token.slice(1)));
      } else {
        fragment.append(span("tok-string", token));
      }
      last = match.index + token.length;
    }
    if (last < code.length) fragment.append(document.createTextNode(code.slice(last)));
    return fragment;
  }

  // -------------------------------------------------------------------------------------------
  // Elements

  function codeBlockElement(block) {
    const wrapper = document.createElement("div");
    wrapper.className = "code-block";
    wrapper.dataset.testid = "code-block";
    wrapper.dataset.language = block.language;
    const header = document.createElement("div");
    header.className = "code-header";
    const label = document.createElement("span");
    label.className = "code-language";
    label.dataset.testid = "code-language";
    label.textContent = block.language || "text";
    const copy = document.createElement("button");
    copy.type = "button";
    copy.className = "copy-code";
    copy.dataset.testid = "copy-code";
    copy.setAttribute("aria-label", `Copy the ${block.language || "text"} code`);
    copy.textContent = "Copy";
    header.append(label, copy);
    const pre = document.createElement("pre");
    const code = document.createElement("code");
    if (block.language) code.className = `language-${block.language}`;
    code.append(highlight(block.code, block.language));
    pre.append(code);
    wrapper.append(header, pre);
    return wrapper;
  }

  function blockElement(block) {
    switch (block.type) {
      case "code":
        return codeBlockElement(block);
      case "heading": {
        const heading = document.createElement(`h${block.level}`);
        appendInline(heading, block.text);
        return heading;
      }
      case "rule":
        return document.createElement("hr");
      case "math": {
        const math = document.createElement("p");
        math.className = "math";
        math.textContent = block.text;
        return math;
      }
      case "quote": {
        const quote = document.createElement("blockquote");
        quote.append(...block.children.map(blockElement));
        return quote;
      }
      case "list": {
        const list = document.createElement(block.ordered ? "ol" : "ul");
        if (block.ordered && block.first !== 1) list.start = block.first;
        if (block.loose) list.className = "loose";
        for (const children of block.items) {
          const item = document.createElement("li");
          item.append(...children.map(blockElement));
          list.append(item);
        }
        return list;
      }
      case "table": {
        const wrapper = document.createElement("div");
        wrapper.className = "table-wrap";
        const table = document.createElement("table");
        const row = (values, tag) => {
          const tr = document.createElement("tr");
          block.header.forEach((_, column) => {
            const cell = document.createElement(tag);
            if (block.align[column]) cell.style.textAlign = block.align[column];
            appendInline(cell, values[column] || "");
            tr.append(cell);
          });
          return tr;
        };
        const head = document.createElement("thead");
        head.append(row(block.header, "th"));
        const body = document.createElement("tbody");
        body.append(...block.rows.map((values) => row(values, "td")));
        table.append(head, body);
        wrapper.append(table);
        return wrapper;
      }
      default: {
        const paragraph = document.createElement("p");
        appendInline(paragraph, block.text);
        return paragraph;
      }
    }
  }

  function lines(text) {
    // Tabs that indent count as four spaces, as nested lists are written with either.
    return text.replace(/\r\n?/g, "\n").split("\n").map((line) => line.replace(/^\t+/, (tabs) => "    ".repeat(tabs.length)));
  }

  // The answer's blocks, each with a key made of its source: equal keys, equal elements.
  function blocksOf(text) {
    const source = lines(text);
    return parseBlocks(source).map((block) => ({
      block, key: `${block.type}${block.open ? " open" : ""}\n${source.slice(block.start, block.end).join("\n")}`,
    }));
  }

  function keyedElement({ block, key }) {
    const node = blockElement(block);
    node.markdownKey = key;
    node.markdownType = block.type;
    return node;
  }

  // The answer's blocks as elements.
  function render(text) {
    return blocksOf(text).map(keyedElement);
  }

  // Renders `text` into `container`, building only the blocks that changed: while an answer
  // streams, the finished blocks above stay the same nodes (a selection in them survives,
  // nothing blinks), and a growing code block keeps its header and Copy button.
  function renderInto(container, text) {
    const blocks = blocksOf(text);
    const old = Array.from(container.children);
    blocks.forEach((keyed, index) => {
      const current = old[index];
      if (current && current.markdownKey === keyed.key) return;
      const node = keyedElement(keyed);
      if (!current) {
        container.append(node);
      } else if (current.markdownType === "code" && node.markdownType === "code"
        && current.dataset.language === node.dataset.language) {
        current.querySelector("code").replaceChildren(...node.querySelector("code").childNodes);
        current.markdownKey = node.markdownKey;
      } else {
        container.replaceChild(node, current);
      }
    });
    for (const extra of old.slice(blocks.length)) extra.remove();
  }

  return { render, renderInto };
})();
