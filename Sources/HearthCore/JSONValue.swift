import Foundation

/// Any JSON value, objects keeping their keys in the order written (a schema's properties, a
/// tool's arguments). `JSONValue(parsing:)` keeps the order; decoding through `Decodable`
/// cannot (Foundation's decoder does not report it) and sorts the keys instead.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let x): hasher.combine(x)
        case .number(let x): hasher.combine(x)
        case .string(let x): hasher.combine(x)
        case .array(let x): hasher.combine(x)
        case .object(let x):
            hasher.combine(x.count)
            for (k, v) in x {
                hasher.combine(k)
                hasher.combine(v)
            }
        }
    }

    /// The value of `key` in an object (the last one, as JSON parsers take duplicates), or nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var numberValue: Double? { if case .number(let n) = self { return n } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var objectValue: [(key: String, value: JSONValue)]? { if case .object(let o) = self { return o } else { return nil } }

    // MARK: Text

    /// Parses JSON text (RFC 8259), keeping the order of object keys.
    public init(parsing text: String) throws {
        try self.init(parsing: Data(text.utf8))
    }

    /// Parses JSON bytes (RFC 8259), keeping the order of object keys.
    public init(parsing data: Data) throws {
        self = try Self.parse([UInt8](data), with: JSONValueBuilder())
    }

    /// Parses JSON bytes (RFC 8259) into the values `builder` makes, objects' keys in their
    /// order: the package's one JSON parser, for `JSONValue` and for other modules' value types.
    public static func parse<Builder: JSONBuilder>(_ bytes: [UInt8], with builder: Builder) throws -> Builder.Value {
        var parser = JSONTextParser(bytes: bytes, builder: builder)
        return try parser.document()
    }

    /// Compact JSON text, keys in their order; whole numbers without a fraction.
    public var jsonText: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n):
            if n.isFinite, n == n.rounded(), abs(n) < 1e15 { out += String(Int64(n)) } else if n.isFinite { out += "\(n)" } else { out += "null" }
        case .string(let s): Self.quote(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                Self.quote(member.key, into: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }

    /// `s` as a JSON string literal, escaped as Python's `json.dumps` escapes it: `\"`, `\\`,
    /// `\n`, `\r`, `\t`, `\b`, `\f`, other control characters as `\u00xx`; with `asciiOnly`
    /// (`ensure_ascii`) every character outside space…`~` as `\uxxxx`, in surrogate pairs above
    /// U+FFFF.
    public static func quote(_ s: String, asciiOnly: Bool = false, into out: inout String) {
        out += "\""
        escapes.escape(s, into: &out) { scalar, out in
            let value = scalar.value
            guard value < 0x20 || (asciiOnly && value > 0x7E) else { return out.unicodeScalars.append(scalar) }
            if value > 0xFFFF {
                out += "\\u" + EscapeTable.hex(0xD800 + ((value - 0x10000) >> 10), width: 4)
                out += "\\u" + EscapeTable.hex(0xDC00 + ((value - 0x10000) & 0x3FF), width: 4)
            } else {
                out += "\\u" + EscapeTable.hex(value, width: 4)
            }
        }
        out += "\""
    }

    private static let escapes = EscapeTable(["\"": "\\\"", "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                                              "\u{08}": "\\b", "\u{0C}": "\\f"])

    // MARK: Codable

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
            self = .object(try keyed.allKeys.sorted { $0.stringValue < $1.stringValue }.map {
                ($0.stringValue, try keyed.decode(JSONValue.self, forKey: $0))
            })
            return
        }
        if var list = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !list.isAtEnd { items.append(try list.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let b = try? single.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? single.decode(Double.self) {
            self = .number(n)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var keyed = encoder.container(keyedBy: AnyKey.self)
            for (k, v) in members { try keyed.encode(v, forKey: AnyKey(stringValue: k)) }
        case .array(let items):
            var list = encoder.unkeyedContainer()
            for item in items { try list.encode(item) }
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let b):
            var single = encoder.singleValueContainer()
            try single.encode(b)
        case .number(let n):
            var single = encoder.singleValueContainer()
            if n == n.rounded(), abs(n) < 1e15 { try single.encode(Int64(n)) } else { try single.encode(n) }
        case .string(let s):
            var single = encoder.singleValueContainer()
            try single.encode(s)
        }
    }
}

/// Makes the values of a JSON parse, one at a time, for `JSONValue.parse(_:with:)`.
///
/// `JSONValue` keeps every number as a `Double`; a type that keeps whole numbers apart from
/// fractions, as Python's `json.loads` does (the chat templates' values), reads the literal.
public protocol JSONBuilder {
    /// What the parse makes.
    associatedtype Value
    /// `null`.
    func null() -> Value
    /// `true` or `false`.
    func bool(_ value: Bool) -> Value
    /// A number as written; nil when `Value` cannot hold it.
    func number(_ literal: JSONNumberLiteral) -> Value?
    /// A string, its escapes resolved.
    func string(_ value: String) -> Value
    /// An array.
    func array(_ items: [Value]) -> Value
    /// An object's members in the order written, repeated keys included.
    func object(_ members: [(key: String, value: Value)]) -> Value
}

/// A number as JSON text wrote it, its grammar (RFC 8259) already checked.
public struct JSONNumberLiteral: Sendable {
    /// The literal, such as `-12`, `1.0` or `1e3`.
    public let text: String
    /// Whether it was written without a fraction or an exponent (`1`, not `1.0` or `1e0`).
    public let isInteger: Bool

    /// Its value as a double (infinite beyond the double's range, as `Double(_:)` reads it).
    public var doubleValue: Double? { Double(text) }
}

/// Builds `JSONValue`s: every number a `Double`.
struct JSONValueBuilder: JSONBuilder {
    func null() -> JSONValue { .null }
    func bool(_ value: Bool) -> JSONValue { .bool(value) }
    func number(_ literal: JSONNumberLiteral) -> JSONValue? { literal.doubleValue.map(JSONValue.number) }
    func string(_ value: String) -> JSONValue { .string(value) }
    func array(_ items: [JSONValue]) -> JSONValue { .array(items) }
    func object(_ members: [(key: String, value: JSONValue)]) -> JSONValue { .object(members) }
}

/// A recursive-descent JSON parser over UTF-8 bytes.
private struct JSONTextParser<Builder: JSONBuilder> {
    typealias Value = Builder.Value
    let bytes: [UInt8]
    let builder: Builder
    var pos = 0
    var depth = 0

    init(bytes: [UInt8], builder: Builder) {
        self.bytes = bytes
        self.builder = builder
    }

    func fail(_ what: String) -> HearthError {
        .invalidArgument("Invalid JSON at byte \(pos): \(what).")
    }

    mutating func space() {
        while pos < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[pos]) { pos += 1 }
    }

    mutating func document() throws -> Value {
        space()
        let value = try self.value()
        space()
        guard pos == bytes.count else { throw fail("text after the value") }
        return value
    }

    mutating func value() throws -> Value {
        guard pos < bytes.count else { throw fail("unexpected end") }
        switch bytes[pos] {
        case UInt8(ascii: "{"):
            depth += 1
            defer { depth -= 1 }
            guard depth <= 512 else { throw fail("nested too deeply") }
            pos += 1
            var members: [(key: String, value: Value)] = []
            space()
            if pos < bytes.count && bytes[pos] == UInt8(ascii: "}") { pos += 1; return builder.object(members) }
            while true {
                space()
                guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                let key = try string()
                space()
                guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { throw fail("expected :") }
                pos += 1
                space()
                members.append((key, try value()))
                space()
                guard pos < bytes.count else { throw fail("unexpected end") }
                if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                guard bytes[pos] == UInt8(ascii: "}") else { throw fail("expected , or }") }
                pos += 1
                return builder.object(members)
            }
        case UInt8(ascii: "["):
            depth += 1
            defer { depth -= 1 }
            guard depth <= 512 else { throw fail("nested too deeply") }
            pos += 1
            var items: [Value] = []
            space()
            if pos < bytes.count && bytes[pos] == UInt8(ascii: "]") { pos += 1; return builder.array(items) }
            while true {
                space()
                items.append(try value())
                space()
                guard pos < bytes.count else { throw fail("unexpected end") }
                if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                guard bytes[pos] == UInt8(ascii: "]") else { throw fail("expected , or ]") }
                pos += 1
                return builder.array(items)
            }
        case UInt8(ascii: "\""):
            return builder.string(try string())
        case UInt8(ascii: "t"): try literal("true"); return builder.bool(true)
        case UInt8(ascii: "f"): try literal("false"); return builder.bool(false)
        case UInt8(ascii: "n"): try literal("null"); return builder.null()
        default:
            return try number()
        }
    }

    mutating func literal(_ word: String) throws {
        let w = Array(word.utf8)
        guard pos + w.count <= bytes.count, Array(bytes[pos..<(pos + w.count)]) == w else { throw fail("expected \(word)") }
        pos += w.count
    }

    mutating func number() throws -> Value {
        let start = pos
        var isInteger = true
        if pos < bytes.count && bytes[pos] == UInt8(ascii: "-") { pos += 1 }
        func digits() -> Int {
            let s = pos
            while pos < bytes.count, bytes[pos] >= 0x30, bytes[pos] <= 0x39 { pos += 1 }
            return pos - s
        }
        guard pos < bytes.count else { throw fail("expected a value") }
        if bytes[pos] == UInt8(ascii: "0") { pos += 1 } else { guard digits() > 0 else { throw fail("expected a value") } }
        if pos < bytes.count && bytes[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard digits() > 0 else { throw fail("expected digits after .") }
        }
        if pos < bytes.count && (bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E")) {
            isInteger = false
            pos += 1
            if pos < bytes.count && (bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-")) { pos += 1 }
            guard digits() > 0 else { throw fail("expected an exponent") }
        }
        let literal = JSONNumberLiteral(text: String(decoding: bytes[start..<pos], as: UTF8.self), isInteger: isInteger)
        guard let value = builder.number(literal) else { throw fail("bad number") }
        return value
    }

    mutating func string() throws -> String {
        pos += 1
        var out: [UInt8] = []
        while true {
            guard pos < bytes.count else { throw fail("a string is not closed") }
            let b = bytes[pos]
            pos += 1
            switch b {
            case UInt8(ascii: "\""):
                guard let s = String(validating: out, as: UTF8.self) else { throw fail("a string is not UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                guard pos < bytes.count else { throw fail("unexpected end") }
                let e = bytes[pos]
                pos += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(8)
                case UInt8(ascii: "f"): out.append(12)
                case UInt8(ascii: "n"): out.append(10)
                case UInt8(ascii: "r"): out.append(13)
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code), pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"),
                       bytes[pos + 1] == UInt8(ascii: "u") {
                        pos += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("a lone surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw fail("a lone surrogate") }
                    out += Array(String(scalar).utf8)
                default: throw fail("an unknown escape")
                }
            case 0..<0x20:
                throw fail("a control character in a string")
            default:
                out.append(b)
            }
        }
    }

    mutating func hex4() throws -> UInt32 {
        guard pos + 4 <= bytes.count else { throw fail("unexpected end") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let d = Character(Unicode.Scalar(bytes[pos])).hexDigitValue else { throw fail("expected hex digits") }
            value = value << 4 | UInt32(d)
            pos += 1
        }
        return value
    }
}

extension JSONValue {
    /// The value a beginning of JSON text stands for so far: open strings, arrays and objects
    /// closed, a member without its value and a value cut inside a literal left out. Nil when
    /// not even that parses.
    public init?(partialText text: String) {
        var bytes = Array(text.utf8)
        for _ in 0..<64 {
            var closers: [UInt8] = []
            var inString = false, escaped = false
            for b in bytes {
                if inString {
                    if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                    continue
                }
                switch b {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"): closers.append(UInt8(ascii: "}"))
                case UInt8(ascii: "["): closers.append(UInt8(ascii: "]"))
                case UInt8(ascii: "}"), UInt8(ascii: "]"): if !closers.isEmpty { closers.removeLast() }
                default: break
                }
            }
            var candidate = bytes
            if inString {
                if escaped { candidate.removeLast() }
                // A cut \u escape is dropped with what follows it.
                if let slash = candidate.lastIndex(of: UInt8(ascii: "\\")), candidate.count - slash < 6,
                   candidate.count > slash + 1, candidate[slash + 1] == UInt8(ascii: "u") {
                    candidate.removeSubrange(slash...)
                }
                candidate.append(UInt8(ascii: "\""))
            }
            candidate += closers.reversed()
            if let value = try? JSONValue(parsing: Data(candidate)) {
                self = value
                return
            }
            // Cut back to the last separator outside a string and try again.
            var cut: Int? = nil
            inString = false
            escaped = false
            for (i, b) in bytes.enumerated() {
                if inString {
                    if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                    continue
                }
                if b == UInt8(ascii: "\"") { inString = true }
                if b == UInt8(ascii: ",") { cut = i }
                if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") { cut = i + 1 }
            }
            guard let at = cut, at < bytes.count else { return nil }
            bytes.removeSubrange(at...)
        }
        return nil
    }
}
