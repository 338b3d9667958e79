/// A shell-style file pattern, matched as Python's `fnmatch` matches it (which is what
/// huggingface_hub's `allow_patterns` use): `*` matches any run of characters, `/` included,
/// `?` one character, `[abc]`, `[a-z]` and `[!abc]` one character of (or not of) a set. A
/// pattern ending in `/` matches everything under that folder.
public struct GlobPattern: Sendable, Hashable {
    private let pattern: [Character]

    /// The pattern `text`.
    public init(_ text: String) {
        pattern = Array(text.hasSuffix("/") ? text + "*" : text)
    }

    /// Whether `name` matches the whole pattern.
    public func matches(_ name: String) -> Bool {
        let text = Array(name)
        // Iterative matching with one backtrack point for the last `*`: linear in practice, and
        // never exponential on hostile patterns.
        var p = 0, t = 0
        var starP = -1, starT = 0
        while t < text.count {
            if p < pattern.count {
                switch pattern[p] {
                case "*":
                    starP = p
                    starT = t
                    p += 1
                    continue
                case "?":
                    p += 1
                    t += 1
                    continue
                case "[":
                    if let (matched, next) = matchSet(at: p, text[t]) {
                        if matched {
                            p = next
                            t += 1
                            continue
                        }
                    } else if text[t] == "[" {
                        p += 1
                        t += 1
                        continue
                    }
                default:
                    if pattern[p] == text[t] {
                        p += 1
                        t += 1
                        continue
                    }
                }
            }
            guard starP >= 0 else { return false }
            p = starP + 1
            starT += 1
            t = starT
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// Matches `c` against the set starting at `start` (a `[`); nil when the set is not closed,
    /// in which case `[` is an ordinary character, as in fnmatch.
    private func matchSet(at start: Int, _ c: Character) -> (Bool, Int)? {
        var i = start + 1
        var negate = false
        if i < pattern.count, pattern[i] == "!" {
            negate = true
            i += 1
        }
        var matched = false
        var first = true
        while i < pattern.count {
            if pattern[i] == "]", !first { return (matched != negate, i + 1) }
            first = false
            if i + 2 < pattern.count, pattern[i + 1] == "-", pattern[i + 2] != "]" {
                if pattern[i] <= c, c <= pattern[i + 2] { matched = true }
                i += 3
            } else {
                if pattern[i] == c { matched = true }
                i += 1
            }
        }
        return nil
    }
}

extension Array where Element == GlobPattern {
    /// Whether `name` matches any pattern; an empty list matches everything.
    func allow(_ name: String) -> Bool { isEmpty || contains { $0.matches(name) } }
}
