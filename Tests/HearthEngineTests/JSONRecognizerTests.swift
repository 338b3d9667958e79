import Foundation
import Hearth
import Testing

/// Whether Foundation's parser reads `bytes` as one JSON object: the oracle for `isComplete`.
private func foundationParsesObject(_ bytes: [UInt8]) -> Bool {
    (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
}

/// Feeds `bytes` one at a time; the number accepted before the first refusal (all of them when
/// none is refused), and whether the recognizer is then complete.
private func run(_ bytes: [UInt8], _ recognizer: JSONRecognizer = JSONRecognizer()) -> (accepted: Int, complete: Bool) {
    var r = recognizer
    for (i, byte) in bytes.enumerated() where !r.consume(byte) { return (i, false) }
    return (bytes.count, r.isComplete)
}

/// The slow twin: a recursive-descent reader of RFC 8259 that reports whether the input is a
/// whole object, a beginning of one, or neither. Only what the exhaustive test's alphabet can
/// spell (ASCII, no `\u`), and no limits on whitespace or depth.
private struct ReferenceReader {
    enum Verdict: Equatable { case complete, prefix, invalid }
    private struct EndOfInput: Error {}
    private struct Invalid: Error {}

    let bytes: [UInt8]
    var i = 0

    static func verdict(_ bytes: [UInt8]) -> Verdict {
        var reader = ReferenceReader(bytes: bytes)
        do {
            reader.spaces()
            guard try reader.peek() == UInt8(ascii: "{") else { throw Invalid() }
            try reader.value()
            reader.spaces()
            return reader.i == bytes.count ? .complete : .invalid
        } catch is EndOfInput {
            return .prefix
        } catch {
            return .invalid
        }
    }

    func peek() throws -> UInt8 {
        guard i < bytes.count else { throw EndOfInput() }
        return bytes[i]
    }

    mutating func take() throws -> UInt8 {
        let b = try peek()
        i += 1
        return b
    }

    mutating func expect(_ c: Character) throws {
        guard try take() == c.asciiValue! else { throw Invalid() }
    }

    mutating func spaces() {
        while i < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[i]) { i += 1 }
    }

    mutating func value() throws {
        switch try peek() {
        case UInt8(ascii: "{"):
            i += 1
            spaces()
            if try peek() == UInt8(ascii: "}") { i += 1; return }
            while true {
                spaces()
                try string()
                spaces()
                try expect(":")
                spaces()
                try value()
                spaces()
                let b = try take()
                if b == UInt8(ascii: "}") { return }
                guard b == UInt8(ascii: ",") else { throw Invalid() }
            }
        case UInt8(ascii: "["):
            i += 1
            spaces()
            if try peek() == UInt8(ascii: "]") { i += 1; return }
            while true {
                spaces()
                try value()
                spaces()
                let b = try take()
                if b == UInt8(ascii: "]") { return }
                guard b == UInt8(ascii: ",") else { throw Invalid() }
            }
        case UInt8(ascii: "\""):
            try string()
        case UInt8(ascii: "t"): for c in "true" { try expect(c) }
        case UInt8(ascii: "f"): for c in "false" { try expect(c) }
        case UInt8(ascii: "n"): for c in "null" { try expect(c) }
        default:
            try number()
        }
    }

    mutating func string() throws {
        try expect("\"")
        while true {
            let b = try take()
            if b == UInt8(ascii: "\"") { return }
            if b < 0x20 || b >= 0x80 { throw Invalid() }
            if b == UInt8(ascii: "\\") {
                guard Array(#""\/bfnrt"#.utf8).contains(try take()) else { throw Invalid() }
            }
        }
    }

    mutating func digits() throws -> Int {
        var n = 0
        while true {
            guard i < bytes.count else { throw EndOfInput() }
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) else { return n }
            i += 1
            n += 1
        }
    }

    /// A number ends at a byte that cannot continue it; inside an object, the end of input
    /// always leaves it unfinished.
    mutating func number() throws {
        if try peek() == UInt8(ascii: "-") { i += 1 }
        let first = try take()
        if first == UInt8(ascii: "0") {
            if i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { throw Invalid() }
        } else if (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(first) {
            _ = try digits()
        } else {
            throw Invalid()
        }
        if try peek() == UInt8(ascii: ".") {
            i += 1
            guard try digits() > 0 else { throw Invalid() }
        }
        if try peek() | 0x20 == UInt8(ascii: "e") {
            i += 1
            if try peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { i += 1 }
            guard try digits() > 0 else { throw Invalid() }
        }
        _ = try peek()
    }
}

/// Seeded random JSON objects, serialized by Foundation: strings with escapes, controls and
/// characters of every UTF-8 length, numbers of every shape, nesting.
private struct RandomDocuments {
    var state: UInt64

    mutating func next(_ n: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(n))
    }

    mutating func string() -> String {
        let pieces = ["a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\u{1}", "\u{1F}", "é", "ß", "€", "日本", "🎉", "𝄞", "\u{7F}", "\u{FFFF}"]
        return (0..<next(6)).map { _ in pieces[next(pieces.count)] }.joined()
    }

    mutating func value(depth: Int) -> Any {
        switch next(depth > 3 ? 6 : 8) {
        case 0: return string()
        case 1: return next(2000) - 1000
        case 2: return Double(next(100_000) - 50000) / Double([1, 7, 1000, 3][next(4)])
        case 3: return [1e-7, -2.5e21, 0.0, 1e300][next(4)]
        case 4: return next(2) == 0
        case 5: return NSNull()
        case 6: return (0..<next(4)).map { _ in value(depth: depth + 1) }
        default: return object(depth: depth + 1)
        }
    }

    mutating func object(depth: Int) -> [String: Any] {
        var o: [String: Any] = [:]
        for _ in 0..<next(5) { o[string()] = value(depth: depth) }
        return o
    }
}

@Suite struct JSONRecognizerTests {
    static let valid = [
        "{}", " {}", "{ }", "{}\n", "\t{\r\n}\t",
        #"{"a":1}"#, #"{"a": 1, "b": [true, false, null]}"#, #"{"":""}"#,
        #"{"nested": {"deeper": {"list": [[], {}, [1, [2, [3]]]]}}}"#,
        #"{"n": [0, -0, 1, -1, 10, 1.5, -0.25, 1e5, 1E5, 1e+5, 1e-5, 0e0, -0.0e-0, 123456789012345678901234567890]}"#,
        #"{"escapes": "\" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u20AC \uFFFF \ud83d\ude00 \uD834\uDD1E"}"#,
        #"{"unicode": "é 日本語 🎉 𝄞"}"#, "{\"del\": \"\u{7F}\"}",
        #"{"a":[{"b":[{"c":null}]}],"d":"e"}"#,
        "{\n  \"name\": \"Ada\",\n  \"age\": 36,\n  \"languages\": [\n    \"English\"\n  ]\n}",
        #"{"a" : 1 , "b" : [ 1 , 2 ] }"#, #"{"a":"}"}"#, #"{"a":"]"}"#, #"{"a":"{["}"#,
        #"{"dup":1,"dup":2}"#,
    ]

    static let invalid = [
        "", "[]", "[1]", "\"a\"", "1", "true", "null", " ", "{", "{\"a\"", "{\"a\":", "{\"a\":1",
        "{\"a\":1,}", "{,}", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{a:1}", "{'a':1}", "{\"a\":[1,]}", "{\"a\":[,1]}",
        "{\"a\":01}", "{\"a\":-01}", "{\"a\":00}", "{\"a\":+1}", "{\"a\":.5}", "{\"a\":1.}", "{\"a\":1.e5}",
        "{\"a\":1e}", "{\"a\":1e+}", "{\"a\":-}", "{\"a\":0x10}", "{\"a\":Infinity}", "{\"a\":NaN}", "{\"a\":1_000}",
        "{\"a\":tru}", "{\"a\":True}", "{\"a\":nul}", "{\"a\":falsey}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
        "{\"a\":\"\\uD800\"}", "{\"a\":\"\\uDC00\"}", "{\"a\":\"\\uD800\\u0041\"}", "{\"a\":\"\\uD800x\"}",
        "{\"a\":\"tab\there\"}", "{\"a\":\"new\nline\"}", "{\"a\":\"nul\u{0}\"}", "{\"a\":1}}", "{\"a\":1}x",
        "{\"a\":1}{}", "{\"a\":[}", "{\"a\":{]}", "{\"a\":[1}", "{\"a\":{\"b\":1]}", "{}}", "{\"a\"::1}",
        "{\"a\":1]", "{\"a\":\"x\"\"y\"}", "{\"a\":[1 2]}", "{1:2}", "{\"a\":{}", "{\"a\": - 1}",
    ]

    @Test("valid objects are complete, every prefix of them is accepted, and Foundation agrees on which are whole")
    func validDocuments() {
        for text in Self.valid {
            let bytes = Array(text.utf8)
            #expect(foundationParsesObject(bytes), "Foundation refuses \(text)")
            #expect(JSONRecognizer.isObject(bytes), "\(text)")
            var r = JSONRecognizer()
            for (i, byte) in bytes.enumerated() {
                #expect(r.isComplete == foundationParsesObject(Array(bytes[..<i])), "\(text) after \(i) bytes")
                let accepted = r.consume(byte)
                #expect(accepted, "\(text): byte \(i) refused")
            }
        }
    }

    /// Foundation on Linux reads trailing commas, which RFC 8259 does not allow.
    static let foundationLenient: Set = ["{\"a\":1,}", "{\"a\":[1,]}"]

    @Test("invalid documents are never complete, and Foundation refuses them too (but for its trailing commas)")
    func invalidDocuments() {
        for text in Self.invalid {
            let bytes = Array(text.utf8)
            #expect(!JSONRecognizer.isObject(bytes), "\(text)")
            #expect(foundationParsesObject(bytes) == Self.foundationLenient.contains(text),
                    "Foundation reads \(text) as an object")
        }
    }

    @Test("a refused byte leaves the recognizer as it was; a refused sequence changes nothing")
    func refusalChangesNothing() {
        var r = JSONRecognizer()
        let start = r.consume(Array(#"{"a": [1, "#.utf8))
        let before = r
        let bracket = r.consume(UInt8(ascii: "]"))
        let afterBracket = r
        let sequence = r.consume(Array("2, ]".utf8))
        #expect(start && !bracket && !sequence)
        #expect(afterBracket == before && r == before)
        let rest = r.consume(Array("2]}".utf8))
        #expect(rest && r.isComplete)
        let letter = r.consume(UInt8(ascii: "x"))
        let newline = r.consume(UInt8(ascii: "\n"))
        #expect(!letter && newline && r.isComplete)
    }

    @Test("numbers: every edge of the grammar", arguments: [
        ("0", true), ("-0", true), ("1e5", true), ("1E-5", true), ("1e+05", true), ("0.0", true), ("-0.5e-0", true),
        ("10", true), ("01", false), ("-01", false), ("00", false), ("-", false), ("+1", false), (".1", false),
        ("1.", false), ("1.e1", false), ("1e", false), ("1e+", false), ("1ee1", false), ("1.2.3", false), ("--1", false),
        ("0e", false), ("-e1", false), ("1e1.5", false), ("1x", false),
    ])
    func numbers(_ number: String, _ valid: Bool) {
        for text in ["{\"n\":\(number)}", "{\"n\":[\(number)]}", "{\"n\":[\(number),\(number)]}", "{\"n\": \(number) }"] {
            let bytes = Array(text.utf8)
            #expect(JSONRecognizer.isObject(bytes) == valid, "\(text)")
            #expect(foundationParsesObject(bytes) == valid, "Foundation on \(text)")
        }
    }

    @Test("strings: raw UTF-8 must be well formed", arguments: [
        ([0xC3, 0xA9], true), ([0xE2, 0x82, 0xAC], true), ([0xF0, 0x9F, 0x8E, 0x89], true), ([0xF4, 0x8F, 0xBF, 0xBF], true),
        ([0xED, 0x9F, 0xBF], true), ([0xEE, 0x80, 0x80], true),
        ([0x80], false), ([0xBF], false), ([0xC0, 0xAF], false), ([0xC1, 0xBF], false), ([0xC3], false),
        ([0xC3, 0x41], false), ([0xE0, 0x80, 0xAF], false), ([0xE0, 0x9F, 0xBF], false), ([0xED, 0xA0, 0x80], false),
        ([0xED, 0xBF, 0xBF], false), ([0xF0, 0x8F, 0xBF, 0xBF], false), ([0xF4, 0x90, 0x80, 0x80], false),
        ([0xF5, 0x80, 0x80, 0x80], false), ([0xFF], false), ([0xE2, 0x82], false), ([0xF0, 0x9F, 0x8E], false),
    ] as [([UInt8], Bool)])
    func utf8(_ character: [UInt8], _ valid: Bool) {
        let bytes = Array(#"{"s":""#.utf8) + character + Array(#""}"#.utf8)
        #expect(JSONRecognizer.isObject(bytes) == valid)
        #expect(foundationParsesObject(bytes) == valid, "Foundation")
        // The same character in a key.
        let key = Array(#"{""#.utf8) + character + Array(#"":1}"#.utf8)
        #expect(JSONRecognizer.isObject(key) == valid)
    }

    @Test("escapes: surrogates only as high-low pairs, refused at the first digit that rules a pair out")
    func surrogates() {
        func accepted(_ text: String) -> Int { run(Array(("{\"s\":\"" + text).utf8)).accepted - 6 }
        #expect(accepted(#"\uD83D\uDE00""#) == 13)
        #expect(accepted(#"\ud800\udc00""#) == 13)
        #expect(accepted(#"\uDBFF\uDFFF""#) == 13)
        #expect(accepted(#"\uD7FF""#) == 7)
        #expect(accepted(#"\uE000""#) == 7)
        #expect(accepted(#"\uDC00"#) == 3, "a lone low surrogate: refused at its second digit")
        #expect(accepted(#"\uDFFF"#) == 3)
        #expect(accepted(#"\uD800""#) == 6, "a high surrogate needs its low half")
        #expect(accepted(#"\uD800\u0041"#) == 8, "the low half starts with D")
        #expect(accepted(#"\uD800\uDB00"#) == 9, "and continues with C to F")
        #expect(accepted(#"\uD800\n"#) == 7)
        for pair in [#"\uD83D\uDE00"#, #"\uDBFF\uDFFF"#] {
            #expect(foundationParsesObject(Array("{\"s\":\"\(pair)\"}".utf8)))
        }
        for lone in [#"\uD800"#, #"\uDC00"#, #"\uD800\u0041"#] {
            #expect(!JSONRecognizer.isObject(Array("{\"s\":\"\(lone)\"}".utf8)))
        }
    }

    @Test("a whitespace run outside strings holds at most 20 bytes and one line feed; inside strings anything goes")
    func whitespaceLimit() {
        let limit = JSONRecognizer().maxWhitespaceRun
        #expect(limit == 20)
        let spaces = String(repeating: " ", count: limit)
        #expect(JSONRecognizer.isObject(Array("\(spaces){\(spaces)\"a\"\(spaces):\(spaces)1\(spaces)}\(spaces)".utf8)))
        let indented = "\r\n" + String(repeating: " ", count: limit - 2)
        #expect(JSONRecognizer.isObject(Array("{\(indented)\"a\":\(indented)[\(indented)1\(indented)]\(indented)}".utf8)))
        #expect(run(Array(("{\"a\":" + spaces + " ").utf8)).accepted == 5 + limit)
        #expect(run(Array(("{}" + spaces + " ").utf8)).accepted == 2 + limit)
        #expect(run(Array("\n\n{}".utf8)).accepted == 1, "a blank line")
        #expect(run(Array("{\"a\": 1, \n \n\"b\": 2}".utf8)).accepted == 11)
        #expect(run(Array("{\"a\": 1\n}\n\n".utf8)).accepted == 10)
        // Each run starts afresh.
        #expect(JSONRecognizer.isObject(Array("\n{\n\"a\"\n:\n[\n1\n,\n2\n]\n}\n".utf8)))
        #expect(JSONRecognizer.isObject(Array("{\"a\":\"\(String(repeating: " ", count: 500))\"}".utf8)))
        var tight = JSONRecognizer(maxWhitespaceRun: 1)
        let spaced = tight.consume(Array("{ \"a\": [ 1, 2 ] }".utf8))
        let twoSpaces = tight.consume(Array("  ".utf8))
        #expect(spaced && !twoSpaces)
        #expect(JSONRecognizer(maxWhitespaceRun: 0).maxWhitespaceRun == 0)
        #expect(JSONRecognizer(maxWhitespaceRun: 1000).maxWhitespaceRun == 255)
    }

    @Test("nesting is limited to maxDepth containers, the top-level object included")
    func depthLimit() {
        #expect(JSONRecognizer().maxDepth == 64)
        let deepest = "{\"a\":" + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}"
        #expect(JSONRecognizer.isObject(Array(deepest.utf8)))
        #expect(foundationParsesObject(Array(deepest.utf8)))
        let tooDeep = "{\"a\":" + String(repeating: "[", count: 64)
        #expect(run(Array(tooDeep.utf8)).accepted == tooDeep.utf8.count - 1)
        let objects = String(repeating: "{\"a\":", count: 64)
        #expect(run(Array((objects + "{").utf8)).accepted == objects.utf8.count)
        #expect(run(Array("{\"a\":[[".utf8), JSONRecognizer(maxDepth: 2)).accepted == 6)
        #expect(JSONRecognizer(maxDepth: 0).maxDepth == 1)
        #expect(JSONRecognizer(maxDepth: 100).maxDepth == 64)
        // Closing frees the depth again.
        let three = JSONRecognizer(maxDepth: 3)
        #expect(run(Array("{\"a\":[[]],\"b\":[[]]}".utf8), three) == (19, true))
        #expect(run(Array("{\"a\":[[]],\"b\":[[[".utf8), three).accepted == 16)
    }

    @Test("Foundation's own output, every prefix, on 300 random objects (its blank lines in empty containers closed up)")
    func randomDocuments() throws {
        var random = RandomDocuments(state: 42)
        for i in 0..<300 {
            let object = random.object(depth: 0)
            var options: JSONSerialization.WritingOptions = [.fragmentsAllowed]
            if i % 2 == 0 { options.insert(.prettyPrinted) }
            if i % 3 == 0 { options.insert(.withoutEscapingSlashes) }
            var text = String(decoding: try JSONSerialization.data(withJSONObject: object, options: options), as: UTF8.self)
            // Foundation pretty-prints an empty container as "[\n\n]"; a line feed inside a
            // string is always escaped, so only whitespace changes.
            text = text.replacingOccurrences(of: "\n\n", with: "\n")
            let bytes = Array(text.utf8)
            var r = JSONRecognizer()
            for (j, byte) in bytes.enumerated() {
                guard r.consume(byte) else {
                    Issue.record("document \(i): byte \(j) refused in \(String(decoding: bytes, as: UTF8.self))")
                    break
                }
                if j + 1 < bytes.count && r.isComplete {
                    Issue.record("document \(i): complete after \(j + 1) of \(bytes.count) bytes")
                }
            }
            #expect(r.isComplete, "document \(i)")
        }
    }

    @Test("every string of up to 7 bytes from a small alphabet: the same verdict as the slow twin, and Foundation agrees on whole objects")
    func exhaustive() {
        let alphabet = Array(#"{}[]":,01-.e\ "#.utf8)
        var compared = 0, prefixes = 0, wholes = 0
        var text: [UInt8] = [UInt8(ascii: "{")]
        func visit() {
            compared += 1
            let verdict = ReferenceReader.verdict(text)
            let (accepted, complete) = run(text)
            let mine: ReferenceReader.Verdict = accepted < text.count ? .invalid : complete ? .complete : .prefix
            if mine != verdict {
                Issue.record("\(String(decoding: text, as: UTF8.self).debugDescription): \(mine), the twin says \(verdict)")
            }
            if verdict != .invalid { prefixes += 1 }
            if verdict == .complete {
                wholes += 1
                #expect(foundationParsesObject(text), "\(String(decoding: text, as: UTF8.self))")
            }
            // Nothing grows out of an invalid string.
            guard verdict != .invalid, text.count < 7 else { return }
            for byte in alphabet {
                text.append(byte)
                visit()
                text.removeLast()
            }
        }
        visit()
        print("exhaustive: \(compared) strings, \(prefixes) beginnings of an object, \(wholes) whole")
        #expect(wholes > 10 && prefixes > 1000)
    }
}
