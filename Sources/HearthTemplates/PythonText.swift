import Foundation
import HearthCore

/// Python's string behaviour, which templates were written against: characters are Unicode
/// scalars (not Swift's grapheme clusters), equality is scalar by scalar (no canonical
/// equivalence), and "whitespace" is `str.isspace`.
enum PythonText {
    /// The widest padding `zfill`, `center`, `%10s`… may produce, so a template cannot ask for terabytes.
    static let maxPadding = 16 << 20

    /// `str.isspace` for one character.
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
            return true
        default:
            return false
        }
    }

    /// The line boundaries of `str.splitlines`.
    static func isLineBreak(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A...0x0D, 0x1C...0x1E, 0x85, 0x2028, 0x2029: return true
        default: return false
        }
    }

    static func equal(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    /// Python orders strings by code point, which is UTF-8 byte order.
    static func less(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    static func length(_ s: String) -> Int { s.unicodeScalars.count }

    static func scalars(_ s: String) -> [Unicode.Scalar] { Array(s.unicodeScalars) }

    static func string<S: Sequence>(_ scalars: S) -> String where S.Element == Unicode.Scalar {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    private static func stripSet(_ chars: String?) -> (Unicode.Scalar) -> Bool {
        if let chars {
            let set = Set(chars.unicodeScalars)
            return { set.contains($0) }
        }
        return isWhitespace
    }

    static func strip(_ s: String, _ chars: String? = nil, leading: Bool = true, trailing: Bool = true) -> String {
        let matches = stripSet(chars)
        let all = scalars(s)
        var start = 0
        var end = all.count
        if leading { while start < end, matches(all[start]) { start += 1 } }
        if trailing { while end > start, matches(all[end - 1]) { end -= 1 } }
        return string(all[start..<end])
    }

    /// `str.split(sep, maxsplit)`; without a separator, runs of whitespace split and empty parts vanish.
    static func split(_ s: String, separator: String?, maxSplit: Int = -1) throws -> [String] {
        let all = scalars(s)
        var parts: [String] = []
        if let separator {
            let sep = scalars(separator)
            guard !sep.isEmpty else { throw TemplateFailure("empty separator") }
            var start = 0
            var i = 0
            while i + sep.count <= all.count, maxSplit < 0 || parts.count < maxSplit {
                if all[i..<i + sep.count].elementsEqual(sep) {
                    parts.append(string(all[start..<i]))
                    i += sep.count
                    start = i
                } else {
                    i += 1
                }
            }
            parts.append(string(all[start...]))
            return parts
        }
        var i = 0
        while i < all.count {
            while i < all.count, isWhitespace(all[i]) { i += 1 }
            if i == all.count { break }
            if maxSplit >= 0, parts.count == maxSplit {
                var end = all.count
                while end > i, isWhitespace(all[end - 1]) { end -= 1 }
                parts.append(string(all[i..<end]))
                break
            }
            let start = i
            while i < all.count, !isWhitespace(all[i]) { i += 1 }
            parts.append(string(all[start..<i]))
        }
        return parts
    }

    /// `str.rsplit(sep, maxsplit)` for an explicit separator.
    static func rsplit(_ s: String, separator: String?, maxSplit: Int) throws -> [String] {
        guard maxSplit >= 0 else { return try split(s, separator: separator) }
        let reversed = string(scalars(s).reversed())
        let reversedSeparator = separator.map { string(scalars($0).reversed()) }
        return try split(reversed, separator: reversedSeparator, maxSplit: maxSplit)
            .map { string(scalars($0).reversed()) }.reversed()
    }

    /// `str.splitlines()` without keepends.
    static func splitLines(_ s: String) -> [String] {
        let all = scalars(s)
        var lines: [String] = []
        var start = 0
        var i = 0
        while i < all.count {
            if isLineBreak(all[i]) {
                lines.append(string(all[start..<i]))
                if all[i] == "\r", i + 1 < all.count, all[i + 1] == "\n" { i += 1 }
                start = i + 1
            }
            i += 1
        }
        if start < all.count { lines.append(string(all[start...])) }
        return lines
    }

    static func replace(_ s: String, _ old: String, _ new: String, count: Int = -1) -> String {
        let all = scalars(s)
        let target = scalars(old)
        let replacement = scalars(new)
        var result: [Unicode.Scalar] = []
        var done = 0
        if target.isEmpty {
            // Python inserts the replacement between every character and at both ends.
            for scalar in all {
                if count < 0 || done < count { result += replacement; done += 1 }
                result.append(scalar)
            }
            if count < 0 || done < count { result += replacement }
            return string(result)
        }
        var i = 0
        while i < all.count {
            if (count < 0 || done < count), i + target.count <= all.count, all[i..<i + target.count].elementsEqual(target) {
                result += replacement
                i += target.count
                done += 1
            } else {
                result.append(all[i])
                i += 1
            }
        }
        return string(result)
    }

    static func find(_ s: String, _ sub: String, reverse: Bool = false) -> Int {
        let all = scalars(s)
        let target = scalars(sub)
        guard target.count <= all.count else { return -1 }
        let positions = Array(0...(all.count - target.count))
        for i in reverse ? positions.reversed() : positions where all[i..<i + target.count].elementsEqual(target) {
            return i
        }
        return -1
    }

    static func count(_ s: String, _ sub: String) -> Int {
        let all = scalars(s)
        let target = scalars(sub)
        if target.isEmpty { return all.count + 1 }
        var n = 0
        var i = 0
        while i + target.count <= all.count {
            if all[i..<i + target.count].elementsEqual(target) {
                n += 1
                i += target.count
            } else {
                i += 1
            }
        }
        return n
    }

    static func upper(_ s: String) -> String { s.uppercased() }
    /// `str.lower`, with Python's one contextual rule: a capital sigma ending a word becomes `ς`.
    static func lower(_ s: String) -> String {
        let scalars = Array(s.unicodeScalars)
        guard scalars.contains("\u{3A3}") else { return s.lowercased() }
        return scalars.indices.map { lower(scalars, at: $0) }.joined()
    }

    /// The lower case of `scalars[index]` in its context, as CPython's `lower_ucs4` gives it.
    private static func lower(_ scalars: [Unicode.Scalar], at index: Int) -> String {
        scalars[index] == "\u{3A3}" && isFinalSigma(scalars, at: index) ? "\u{3C2}" : String(scalars[index]).lowercased()
    }

    /// Unicode's Final_Sigma condition: a cased letter before (past case-ignorable ones) and none after.
    private static func isFinalSigma(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
        var before = index - 1
        while before >= 0, scalars[before].properties.isCaseIgnorable { before -= 1 }
        guard before >= 0, isCased(scalars[before]) else { return false }
        var after = index + 1
        while after < scalars.count, scalars[after].properties.isCaseIgnorable { after += 1 }
        return !(after < scalars.count && isCased(scalars[after]))
    }

    /// `str.casefold`: full Unicode case folding (`ß` becomes `ss`).
    static func casefold(_ s: String) -> String { s.folding(options: .caseInsensitive, locale: nil) }

    /// `str.istitle`: some cased characters, capitals only after uncased ones, small letters only after cased ones.
    static func isTitle(_ s: String) -> Bool {
        var previousCased = false
        var sawCased = false
        for scalar in s.unicodeScalars {
            let properties = scalar.properties
            if properties.isUppercase || properties.generalCategory == .titlecaseLetter {
                if previousCased { return false }
                previousCased = true
                sawCased = true
            } else if properties.isLowercase {
                if !previousCased { return false }
                previousCased = true
                sawCased = true
            } else {
                previousCased = false
            }
        }
        return sawCased
    }

    /// `str.expandtabs`: each tab becomes spaces up to the next multiple of `size` columns.
    static func expandTabs(_ s: String, size: Int) -> String {
        var result = ""
        var column = 0
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\t":
                if size > 0 {
                    let spaces = size - column % size
                    result += String(repeating: " ", count: spaces)
                    column += spaces
                }
            case "\n", "\r":
                result.unicodeScalars.append(scalar)
                column = 0
            default:
                result.unicodeScalars.append(scalar)
                column += 1
            }
        }
        return result
    }

    private static func isCased(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isCased
    }

    /// `str.title`: a cased character after an uncased one starts a word.
    static func title(_ s: String) -> String {
        var result = ""
        var previousCased = false
        let scalars = Array(s.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            result += previousCased ? lower(scalars, at: index) : titlecase(scalar)
            previousCased = isCased(scalar)
        }
        return result
    }

    private static func titlecase(_ scalar: Unicode.Scalar) -> String {
        scalar.properties.titlecaseMapping
    }

    /// `str.capitalize`: the first character in title case, the rest lower case.
    static func capitalize(_ s: String) -> String {
        let scalars = Array(s.unicodeScalars)
        guard let first = scalars.first else { return s }
        return titlecase(first) + scalars.indices.dropFirst().map { lower(scalars, at: $0) }.joined()
    }

    /// Jinja's `title` filter, which splits words at `-`, whitespace and opening brackets.
    static func jinjaTitle(_ s: String) -> String {
        var result = ""
        var word: [Unicode.Scalar] = []
        // Each word is `word[0].upper() + word[1:].lower()`: the rest is lowered as a string of its own.
        func flush() {
            guard let first = word.first else { return }
            result += String(first).uppercased() + lower(String(String.UnicodeScalarView(word.dropFirst())))
            word = []
        }
        for scalar in s.unicodeScalars {
            if scalar == "-" || scalar == "(" || scalar == "{" || scalar == "[" || scalar == "<" || isWhitespace(scalar) {
                flush()
                result.unicodeScalars.append(scalar)
            } else {
                word.append(scalar)
            }
        }
        flush()
        return result
    }

    /// `repr(float)`: the shortest digits that round-trip, in fixed notation for exponents -4..<16.
    static func floatRepr(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == 0 { return value.sign == .minus ? "-0.0" : "0.0" }
        var text = "\(value.magnitude)"
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(text[text.index(after: e)...])!
            text = String(text[..<e])
        }
        var digits = text.replacingOccurrences(of: ".", with: "")
        let pointPosition = (text.firstIndex(of: ".").map { text.distance(from: text.startIndex, to: $0) } ?? text.count)
        var decimalExponent = pointPosition + exponent  // value = 0.DIGITS × 10^decimalExponent
        while digits.hasPrefix("0") {
            digits.removeFirst()
            decimalExponent -= 1
        }
        while digits.hasSuffix("0") { digits.removeLast() }
        if digits.isEmpty { digits = "0" }
        let scientific = decimalExponent - 1
        var result: String
        if scientific < -4 || scientific >= 16 {
            result = String(digits.first!)
            if digits.count > 1 { result += "." + digits.dropFirst() }
            result += scientific < 0 ? "e-" : "e+"
            let magnitude = abs(scientific)
            result += magnitude < 10 ? "0\(magnitude)" : "\(magnitude)"
        } else if decimalExponent <= 0 {
            result = "0." + String(repeating: "0", count: -decimalExponent) + digits
        } else if decimalExponent >= digits.count {
            result = digits + String(repeating: "0", count: decimalExponent - digits.count) + ".0"
        } else {
            let split = digits.index(digits.startIndex, offsetBy: decimalExponent)
            result = digits[..<split] + "." + digits[split...]
        }
        return value < 0 ? "-" + result : result
    }

    /// `repr(str)`: single quotes unless the text holds a single quote and no double quote.
    static func stringRepr(_ s: String) -> String {
        let quote: Unicode.Scalar = s.unicodeScalars.contains("'") && !s.unicodeScalars.contains("\"") ? "\"" : "'"
        var result = String(quote)
        reprEscapes.escape(s, into: &result) { scalar, result in
            if scalar == quote {
                result += "\\" + String(quote)
            } else if isPrintable(scalar) {
                result.unicodeScalars.append(scalar)
            } else if scalar.value <= 0xFF {
                result += "\\x" + EscapeTable.hex(scalar.value, width: 2)
            } else if scalar.value <= 0xFFFF {
                result += "\\u" + EscapeTable.hex(scalar.value, width: 4)
            } else {
                result += "\\U" + EscapeTable.hex(scalar.value, width: 8)
            }
        }
        return result + String(quote)
    }

    private static let reprEscapes = EscapeTable(["\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"])

    /// Python's `str.isprintable` for one character, which `repr` writes as it is: everything but
    /// controls, format characters, surrogates, private use, unassigned code points and separators
    /// other than the space (so a no-break space or an emoji's zero-width joiner is escaped).
    static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == " " { return true }
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator, .spaceSeparator:
            return false
        default:
            return true
        }
    }
}
