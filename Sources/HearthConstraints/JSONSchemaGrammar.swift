import Foundation
import HearthCore

/// How `Grammar(jsonSchema:options:)` lets JSON be written.
public struct JSONSchemaOptions: Sendable, Hashable {
    /// The whitespace allowed between JSON's tokens.
    public enum Whitespace: Sendable, Hashable {
        /// None at all: `{"a":1,"b":[true,null]}`.
        case compact
        /// After `{`, `[`, `,` and `:` and before `}` and `]`: nothing, one space, or a newline
        /// and up to `maximumIndent` spaces or tabs. Enough for the pretty-printed JSON models
        /// have seen, bounded so that a model cannot spend its budget on blanks. Never before the
        /// first token or after the last, so an answer ends with its value.
        case flexible
    }

    /// The whitespace allowed between tokens; `.flexible` by default.
    public var whitespace: Whitespace
    /// Most spaces or tabs after a newline under `.flexible`.
    public var maximumIndent: Int
    /// Most digits of a number's integer part, and of its fraction, where the schema sets no
    /// bound on that side (nil: no limit). A model sampling freely could otherwise write digits
    /// without end; 16 is as many as a double holds.
    public var maximumNumberDigits: Int?
    /// What an object schema that says nothing of `additionalProperties` allows besides its
    /// properties. False (the default) allows none, as llama.cpp and OpenAI's strict mode read
    /// such schemas, so a model asked for an object writes just its properties; true allows any
    /// other key, as the JSON Schema specification reads them.
    public var additionalPropertiesByDefault: Bool

    /// Options with the given values; the defaults are flexible whitespace with indents of up to
    /// 20, numbers of up to 16 digits, and no undeclared properties.
    public init(whitespace: Whitespace = .flexible, maximumIndent: Int = 20, maximumNumberDigits: Int? = 16,
                additionalPropertiesByDefault: Bool = false) {
        self.whitespace = whitespace
        self.maximumIndent = maximumIndent
        self.maximumNumberDigits = maximumNumberDigits
        self.additionalPropertiesByDefault = additionalPropertiesByDefault
    }
}

extension Grammar {
    /// The grammar of the JSON texts valid under `jsonSchema`, for constrained generation.
    ///
    /// Supported: `type` (one or a list), `enum`, `const`, `properties`, `required`,
    /// `additionalProperties`, `items`, `prefixItems` (and draft 4's array `items` with
    /// `additionalItems`), `minItems`, `maxItems`, `minLength`, `maxLength`, `pattern` (a regular
    /// expression subset, see below), `format` (`date`, `time`, `date-time`, `uuid`, and `email`
    /// as an approximation: a plain dot-atom address), `minimum`, `maximum`,
    /// `exclusiveMinimum`, `exclusiveMaximum`, `anyOf`, `oneOf`, `allOf`, and `$ref` to any
    /// place in the schema (`#`, `#/$defs/…`, `#/definitions/…`), recursion included.
    /// `title`, `description`, `$schema`, `$id` (at the root), `$comment`, `examples`, `default`,
    /// `deprecated`, `readOnly` and `writeOnly` are ignored; `uniqueItems: false` means nothing.
    /// Any other keyword (`multipleOf`, `patternProperties`, `if`, `not`, `uniqueItems: true`,
    /// `minProperties`…) is refused with an error naming it and where it is, never ignored.
    ///
    /// Every text the grammar matches is valid under the schema, and every valid value can be
    /// written in a form it matches. That form is:
    /// - properties in the order the schema lists them (optional ones may be left out), then any
    ///   additional properties; keys are not repeated except among additional ones;
    /// - strings with characters as themselves, escaping only the quote, the backslash and
    ///   control characters (`\n`, or `\u00XX`), so each string has one spelling and lengths,
    ///   patterns and excluded keys are exact;
    /// - numbers without leading zeros; an unbounded side up to `maximumNumberDigits` digits;
    ///   numbers with a bound as decimals without exponent of up to 15 significant digits,
    ///   compared with the bound exactly (and, at that precision, as a double would be);
    ///   integers between bounds exactly, digit by digit;
    /// - whitespace as `options.whitespace` allows.
    ///
    /// Choices of meaning:
    /// - `oneOf` is compiled as `anyOf`: exact when its alternatives cannot both match (different
    ///   types, different constants); a document matching two of them is accepted although the
    ///   schema refuses it.
    /// - A schema without `type` takes its types from its keywords (`properties` → object,
    ///   `items` → array, `pattern` → string, `minimum` → number…), as llama.cpp does; with none,
    ///   any value.
    /// - `additionalProperties` left out follows `options.additionalPropertiesByDefault`.
    /// - `allOf` merges its members (object properties, required names, bounds, types); members
    ///   that constrain the same thing in ways that cannot be combined are refused.
    /// - `enum` and `const` values are written compactly where the schema lists them, and are
    ///   kept only if the rest of the schema allows them.
    /// - Patterns are searched for, as JSON Schema says (an anchor `^`/`$` ties a side down).
    ///   `\d`, `\w` and `\s` match ASCII only and their negations ASCII only, since regex engines
    ///   disagree beyond it; lookarounds, backreferences, word boundaries and inline flags are refused.
    public init(jsonSchema: JSONValue, options: JSONSchemaOptions = .init()) throws {
        guard options.maximumIndent >= 0, (options.maximumNumberDigits ?? 1) >= 1 else {
            throw HearthError.invalidArgument("JSONSchemaOptions: maximumIndent must be at least 0 and maximumNumberDigits at least 1.")
        }
        var compiler = JSONSchemaCompiler(document: jsonSchema, options: options)
        self = try compiler.grammar()
    }

    /// Any JSON value, with flexible whitespace (`Grammar(jsonSchema: true)`).
    public static let anyJSONValue: Grammar = {
        // A fixed schema that the tests compile: it cannot fail.
        try! Grammar(jsonSchema: .bool(true))
    }()

    /// Any JSON object, with flexible whitespace.
    public static let anyJSONObject: Grammar = {
        try! Grammar(jsonSchema: .object([("type", .string("object")), ("additionalProperties", .bool(true))]))
    }()
}

/// One schema object met while compiling, with where it is (a JSON Pointer fragment such as
/// `#/properties/age`) for error messages.
struct SchemaObject {
    var members: [(key: String, value: JSONValue)]
    var path: String

    subscript(key: String) -> JSONValue? { members.last { $0.key == key }?.value }

    func has(_ key: String) -> Bool { members.contains { $0.key == key } }

    func error(_ message: String) -> HearthError {
        .invalidArgument("The JSON schema at \(path): \(message).")
    }

    /// A non-negative whole number, or nil when absent.
    func count(_ key: String) throws -> Int? {
        guard let v = self[key] else { return nil }
        guard let n = v.numberValue, n >= 0, n == n.rounded(), n <= 1_000_000 else {
            throw error("\(key) must be a whole number from 0 to 1,000,000")
        }
        return Int(n)
    }

    func string(_ key: String) throws -> String? {
        guard let v = self[key] else { return nil }
        guard let s = v.stringValue else { throw error("\(key) must be a string") }
        return s
    }

    func removing(_ keys: Set<String>) -> SchemaObject {
        SchemaObject(members: members.filter { !keys.contains($0.key) }, path: path)
    }

    /// The keys that constrain values (everything but annotations).
    var assertions: [String] { members.map(\.key).filter { !JSONSchemaCompiler.annotations.contains($0) } }
}

/// The JSON types, as a set.
struct JSONTypes: OptionSet, Hashable {
    let rawValue: UInt8
    static let object = JSONTypes(rawValue: 1), array = JSONTypes(rawValue: 2), string = JSONTypes(rawValue: 4)
    static let integer = JSONTypes(rawValue: 8), number = JSONTypes(rawValue: 16), boolean = JSONTypes(rawValue: 32)
    static let null = JSONTypes(rawValue: 64)
    static let all: JSONTypes = [.object, .array, .string, .integer, .number, .boolean, .null]
    static let names: [(String, JSONTypes)] = [("object", .object), ("array", .array), ("string", .string), ("integer", .integer),
                                               ("number", .number), ("boolean", .boolean), ("null", .null)]

    /// The types of `value`; a whole number is both integer and number.
    init(of value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool: self = .boolean
        case .number(let n): self = n == n.rounded() && n.isFinite ? [.integer, .number] : .number
        case .string: self = .string
        case .array: self = .array
        case .object: self = .object
        }
    }

    init(rawValue: UInt8) { self.rawValue = rawValue }
}

/// Compiles one JSON schema document into grammar rules.
struct JSONSchemaCompiler {
    typealias Alternatives = [[Grammar.Element]]

    /// Keywords that do not constrain values, and the containers of definitions.
    static let annotations: Set<String> = ["title", "description", "$schema", "$comment", "examples", "default", "deprecated",
                                           "readOnly", "writeOnly", "$id", "$defs", "definitions"]
    static let objectKeywords: Set<String> = ["properties", "required", "additionalProperties"]
    static let arrayKeywords: Set<String> = ["items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"]
    static let stringKeywords: Set<String> = ["minLength", "maxLength", "pattern", "format"]
    static let numberKeywords: Set<String> = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
    static let supported: Set<String> = objectKeywords.union(arrayKeywords).union(stringKeywords).union(numberKeywords)
        .union(["type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"])

    let document: JSONValue
    let options: JSONSchemaOptions
    var builder = GrammarBuilder()
    /// The rule of each `$ref` target compiled so far.
    var refRules: [String: Int] = [:]
    /// References being compiled that nothing has been matched since: one met again is a cycle
    /// that never reaches a value.
    var directRefs: [String] = []
    /// References being merged into the schemas that refer to them (allOf, keywords beside $ref).
    var resolvingRefs: [String] = []
    /// Rules for the characters of a string drawn from a set.
    var characterRules: [CodePointSet: Int] = [:]
    /// Rules for fraction digits between bounds.
    var fractionRules: [FractionKey: [Int]] = [:]
    var depth = 0

    init(document: JSONValue, options: JSONSchemaOptions) {
        self.document = document
        self.options = options
    }

    /// The grammar of the whole document, its rules that can never finish a value removed.
    mutating func grammar() throws -> Grammar {
        let alternatives = try compile(document, at: "#")
        guard !alternatives.isEmpty else {
            throw HearthError.invalidArgument("The JSON schema allows no value at all (it is false, or its conditions contradict each other).")
        }
        let root = builder.define("root", alternatives)
        var rules = builder.rules
        let productive = Self.productiveRules(rules)
        guard productive[root] else {
            throw HearthError.invalidArgument("The JSON schema allows no finite value: a required property or item always leads back to the schema it is in; make the recursion optional (an optional property, anyOf with null, or minItems 0).")
        }
        for i in rules.indices {
            rules[i].alternatives = productive[i] ? rules[i].alternatives.filter { Self.isProductive($0, productive) } : []
        }
        return try Grammar(rules: rules, root: root)
    }

    static func isProductive(_ sequence: [Grammar.Element], _ productive: [Bool]) -> Bool {
        sequence.allSatisfy { element in
            switch element {
            case .rule(let r): return productive[r]
            case .characters(let c): return c.negated || !c.ranges.isEmpty
            case .token: return true
            }
        }
    }

    /// Which rules can match some finite text (a rule that only leads back to itself cannot).
    static func productiveRules(_ rules: [Grammar.Rule]) -> [Bool] {
        var productive = [Bool](repeating: false, count: rules.count)
        var changed = true
        while changed {
            changed = false
            for (i, rule) in rules.enumerated() where !productive[i] {
                if rule.alternatives.contains(where: { isProductive($0, productive) }) {
                    productive[i] = true
                    changed = true
                }
            }
        }
        return productive
    }

    // MARK: Schemas

    /// The alternatives for values valid under `value`, a schema at `path`; empty when none is.
    mutating func compile(_ value: JSONValue, at path: String) throws -> Alternatives {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 200 else { throw HearthError.invalidArgument("The JSON schema at \(path) is nested too deeply (over 200 levels).") }
        switch value {
        case .bool(true): return [[.rule(anyValueRule())]]
        case .bool(false): return []
        case .object(let members): return try compile(SchemaObject(members: members, path: path))
        default:
            throw HearthError.invalidArgument("The JSON schema at \(path) must be an object or a boolean, not \(value.jsonText).")
        }
    }

    /// Refuses keywords the compiler does not enforce, naming them.
    func checkKeywords(_ schema: SchemaObject) throws {
        var seen = Set<String>()
        for (key, value) in schema.members {
            guard seen.insert(key).inserted else { throw schema.error("the keyword \"\(key)\" appears twice") }
            if key == "uniqueItems" && value == .bool(false) { continue }
            if key == "$id" && schema.path != "#" {
                throw HearthError.invalidArgument("unsupported JSON Schema keyword \"$id\" at \(schema.path): only the root may have an $id (a nested one changes what references mean); remove it.")
            }
            guard Self.annotations.contains(key) || (Self.supported.contains(key) && key != "uniqueItems") else {
                throw HearthError.invalidArgument("unsupported JSON Schema keyword \"\(key)\" at \(schema.path): a grammar cannot enforce it while generating; remove it (and check it after generation) or express it with supported keywords.")
            }
        }
    }

    mutating func compile(_ schema: SchemaObject) throws -> Alternatives {
        try checkKeywords(schema)
        if let ref = schema["$ref"] {
            guard let pointer = ref.stringValue else { throw schema.error("$ref must be a string") }
            let siblings = schema.removing(["$ref"])
            if siblings.assertions.isEmpty { return [[.rule(try refRule(pointer, at: schema.path))]] }
            // Keywords beside $ref apply too (draft 2019-09 on): the target and them, merged.
            guard let merged = try resolved(.object(schema.members), at: schema.path) else { return [] }
            return try compile(merged)
        }
        if schema.has("allOf") {
            guard let merged = try resolved(.object(schema.members), at: schema.path) else { return [] }
            return try compile(merged)
        }
        if schema.has("anyOf") || schema.has("oneOf") {
            if schema.has("anyOf") && schema.has("oneOf") {
                throw schema.error("anyOf and oneOf together are not supported; combine them into one list")
            }
            let key = schema.has("anyOf") ? "anyOf" : "oneOf"
            guard case .array(let options)? = schema[key], !options.isEmpty else { throw schema.error("\(key) must be a non-empty array of schemas") }
            let siblings = schema.removing([key])
            var alternatives: Alternatives = []
            for (i, option) in options.enumerated() {
                let path = "\(schema.path)/\(key)/\(i)"
                if siblings.assertions.isEmpty {
                    alternatives += try compile(option, at: path)
                } else {
                    // Keywords beside anyOf apply to every alternative: each is merged with them.
                    guard let alternative = try resolved(option, at: path), let merged = try merge(siblings, alternative, at: path) else { continue }
                    alternatives += try compile(merged)
                }
            }
            return alternatives
        }
        if schema.has("enum") || schema.has("const") { return try enumAlternatives(schema) }

        let types = try types(of: schema)
        if types == .all && schema.assertions.isEmpty { return [[.rule(anyValueRule())]] }
        var alternatives: Alternatives = []
        if types.contains(.object) { alternatives += try structure { try $0.objectAlternatives(schema) } }
        if types.contains(.array) { alternatives += try structure { try $0.arrayAlternatives(schema) } }
        if types.contains(.string) { alternatives += try stringAlternatives(schema) }
        if types.contains(.number) {
            alternatives += try numberAlternatives(schema)
        } else if types.contains(.integer) {
            alternatives += try integerAlternatives(schema)
        }
        if types.contains(.boolean) { alternatives += [Self.literal("true"), Self.literal("false")] }
        if types.contains(.null) { alternatives.append(Self.literal("null")) }
        return alternatives
    }

    /// Runs `body` for the inside of an object or array: a reference met there has matched
    /// something since the ones around it, so it is no cycle.
    mutating func structure<T>(_ body: (inout JSONSchemaCompiler) throws -> T) throws -> T {
        let saved = directRefs
        directRefs = []
        defer { directRefs = saved }
        return try body(&self)
    }

    /// The types `type` allows, or when absent the types its keywords speak of (any value when none).
    func types(of schema: SchemaObject) throws -> JSONTypes {
        func named(_ name: String) throws -> JSONTypes {
            guard let t = JSONTypes.names.first(where: { $0.0 == name })?.1 else {
                throw schema.error("unknown type \"\(name)\"; the types are object, array, string, integer, number, boolean and null")
            }
            return t
        }
        switch schema["type"] {
        case .string(let name)?: return try named(name)
        case .array(let list)?:
            guard !list.isEmpty else { throw schema.error("type must not be an empty list") }
            var types: JSONTypes = []
            for item in list {
                guard let name = item.stringValue else { throw schema.error("type must list type names") }
                types.formUnion(try named(name))
            }
            return types
        case nil:
            let keys = Set(schema.assertions)
            var types: JSONTypes = []
            if !keys.isDisjoint(with: Self.objectKeywords) { types.insert(.object) }
            if !keys.isDisjoint(with: Self.arrayKeywords.subtracting(["uniqueItems"])) { types.insert(.array) }
            if !keys.isDisjoint(with: Self.stringKeywords) { types.insert(.string) }
            if !keys.isDisjoint(with: Self.numberKeywords) { types.insert(.number) }
            return types.isEmpty ? .all : types
        default:
            throw schema.error("type must be a type name or a list of them")
        }
    }

    // MARK: References

    /// The schema `ref` points to (a fragment of this document: `#`, `#/$defs/name`…).
    func target(of ref: String, at path: String) throws -> (value: JSONValue, path: String) {
        guard ref.hasPrefix("#") else {
            throw HearthError.invalidArgument("The JSON schema at \(path): $ref \"\(ref)\" points outside the schema; only references within it (#/$defs/…) are supported: copy the definition under $defs.")
        }
        let fragment = String(ref.dropFirst()).removingPercentEncoding ?? String(ref.dropFirst())
        guard fragment.isEmpty || fragment.hasPrefix("/") else {
            throw HearthError.invalidArgument("unsupported JSON Schema keyword \"$anchor\" at \(path): $ref \"\(ref)\" names an anchor; refer to the definition by its path (#/$defs/…) instead.")
        }
        var value = document
        if !fragment.isEmpty {
            for token in fragment.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
                let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
                var next: JSONValue? = nil
                switch value {
                case .object: next = value[key]
                case .array(let items): if let i = Int(key), items.indices.contains(i) { next = items[i] }
                default: break
                }
                guard let found = next else {
                    throw HearthError.invalidArgument("The JSON schema at \(path): $ref \"\(ref)\" points to nothing in the schema; define it (under $defs) or correct the reference.")
                }
                value = found
            }
        }
        return (value, "#" + fragment)
    }

    /// The rule for the schema `ref` points to, compiled once (so that recursion refers back).
    mutating func refRule(_ ref: String, at path: String) throws -> Int {
        if let known = refRules[ref] {
            if directRefs.contains(ref) {
                throw HearthError.invalidArgument("The JSON schema at \(path): $ref \"\(ref)\" leads back to itself before any object or array (\((directRefs + [ref]).joined(separator: " → "))), so it never describes a value.")
            }
            return known
        }
        let (value, targetPath) = try target(of: ref, at: path)
        let name = "ref " + targetPath
        let rule = builder.reference(name)
        refRules[ref] = rule
        directRefs.append(ref)
        let alternatives = try compile(value, at: targetPath)
        directRefs.removeLast()
        guard !alternatives.isEmpty else {
            throw HearthError.invalidArgument("The JSON schema at \(path): $ref \"\(ref)\" points to a schema that no value satisfies.")
        }
        builder.define(name, alternatives)
        return rule
    }

    // MARK: Values

    /// Whitespace between tokens, as the options allow.
    mutating func whitespace() -> [Grammar.Element] {
        guard options.whitespace == .flexible else { return [] }
        if builder.has("ws") { return [.rule(builder.reference("ws"))] }
        let r = builder.reference("ws")
        let indent = builder.repeated([.characters(Grammar.CharacterClass([0x09...0x09, 0x20...0x20]))], minimum: 0,
                                      maximum: options.maximumIndent, name: "ws-indent")
        builder.define("ws", [[], Self.literal(" "), Self.literal("\n") + indent])
        return [.rule(r)]
    }

    /// Any JSON value: objects, arrays, strings, numbers, booleans and null.
    mutating func anyValueRule() -> Int {
        if builder.has("value") { return builder.reference("value") }
        let value = builder.reference("value")
        let ws = whitespace()
        let comma = Self.literal(",") + ws
        let string = builder.define("string", [stringOfLength(minimum: 0, maximum: nil)])
        let member = [Grammar.Element.rule(string)] + Self.literal(":") + ws + [.rule(value)]
        let object = builder.define("object", [
            Self.literal("{") + ws + Self.literal("}"),
            Self.literal("{") + ws + member + builder.repeated(comma + member, minimum: 0, maximum: nil, name: "object-members") + ws + Self.literal("}"),
        ])
        let array = builder.define("array", [
            Self.literal("[") + ws + Self.literal("]"),
            Self.literal("[") + ws + [.rule(value)] + builder.repeated(comma + [.rule(value)], minimum: 0, maximum: nil, name: "array-items")
                + ws + Self.literal("]"),
        ])
        builder.define("value", [[.rule(object)], [.rule(array)], [.rule(string)], [.rule(anyNumberRule())],
                                 Self.literal("true"), Self.literal("false"), Self.literal("null")])
        return value
    }

    /// `value` written out, with whitespace allowed where the options allow it.
    mutating func literalValue(_ value: JSONValue) -> [Grammar.Element] {
        switch value {
        case .string(let s): return Self.quotedLiteral(s)
        case .array(let items):
            let ws = whitespace()
            guard !items.isEmpty else { return Self.literal("[") + ws + Self.literal("]") }
            var out = Self.literal("[") + ws
            for (i, item) in items.enumerated() {
                if i > 0 { out += Self.literal(",") + ws }
                out += literalValue(item)
            }
            return out + ws + Self.literal("]")
        case .object(let members):
            let ws = whitespace()
            guard !members.isEmpty else { return Self.literal("{") + ws + Self.literal("}") }
            var out = Self.literal("{") + ws
            for (i, member) in members.enumerated() {
                if i > 0 { out += Self.literal(",") + ws }
                out += Self.quotedLiteral(member.key) + Self.literal(":") + ws + literalValue(member.value)
            }
            return out + ws + Self.literal("}")
        default:
            return Self.literal(value.jsonText)
        }
    }

    /// `enum` and `const`: the values both list, that the rest of the schema allows.
    mutating func enumAlternatives(_ schema: SchemaObject) throws -> Alternatives {
        var values: [JSONValue]? = nil
        if let c = schema["const"] { values = [c] }
        if let e = schema["enum"] {
            guard case .array(let list) = e, !list.isEmpty else { throw schema.error("enum must be a non-empty array") }
            values = values.map { v in v.filter { list.contains($0) } } ?? list
        }
        var kept: [JSONValue] = []
        for v in values ?? [] where !kept.contains(v) { kept.append(v) }
        let rest = schema.removing(["enum", "const"])
        let types = try types(of: rest)
        kept = kept.filter { !JSONTypes(of: $0).isDisjoint(with: types) }
        // Other keywords beside the values: each value is kept if the rest of the schema, compiled
        // on its own, matches it.
        if !rest.assertions.filter({ $0 != "type" }).isEmpty {
            var compact = options
            compact.whitespace = .compact
            var check = JSONSchemaCompiler(document: document, options: compact)
            let alternatives = try check.compile(rest)
            if alternatives.isEmpty {
                kept = []
            } else {
                check.builder.define("root", alternatives)
                let grammar = CompiledGrammar(try check.builder.build(root: "root"))
                kept = kept.filter { value in
                    var state = grammar.start()
                    return state.consume(Array(value.jsonText.utf8), in: grammar) && state.isAccepting
                }
            }
        }
        guard !kept.isEmpty else { return [] }
        return kept.map { literalValue($0) }
    }

    // MARK: Objects

    /// An object schema: the properties in their order, each optional one free to be left out,
    /// then additional properties when allowed.
    mutating func objectAlternatives(_ schema: SchemaObject) throws -> Alternatives {
        var declared: [(name: String, schema: JSONValue)] = []
        if let p = schema["properties"] {
            guard case .object(let members) = p else { throw schema.error("properties must be an object") }
            for m in members {
                guard !declared.contains(where: { $0.name == m.key }) else { throw schema.error("the property \"\(m.key)\" is declared twice") }
                declared.append((m.key, m.value))
            }
        }
        var required: [String] = []
        if let r = schema["required"] {
            guard case .array(let names) = r else { throw schema.error("required must be an array of property names") }
            for n in names {
                guard let name = n.stringValue else { throw schema.error("required must be an array of property names") }
                guard !required.contains(name) else { throw schema.error("\"\(name)\" is listed twice in required") }
                required.append(name)
            }
        }
        // Additional properties: nil none, else the schema of their values.
        let additional: JSONValue?
        switch schema["additionalProperties"] {
        case nil: additional = options.additionalPropertiesByDefault ? .bool(true) : nil
        case .bool(false)?: additional = nil
        case let value?: additional = value
        }

        struct Member { var name: String; var required: Bool; var value: [Grammar.Element] }
        var members: [Member] = []
        for (name, propertySchema) in declared {
            let isRequired = required.contains(name)
            let path = "\(schema.path)/properties/\(Self.pointerToken(name))"
            let alternatives = try compile(propertySchema, at: path)
            guard !alternatives.isEmpty else {
                if isRequired { throw HearthError.invalidArgument("The JSON schema at \(path): the required property \"\(name)\" allows no value.") }
                continue
            }
            members.append(Member(name: name, required: isRequired, value: wrap(alternatives, name: path)))
        }
        var additionalValue: [Grammar.Element]? = nil
        if let additional {
            let alternatives = try compile(additional, at: "\(schema.path)/additionalProperties")
            if !alternatives.isEmpty { additionalValue = wrap(alternatives, name: "\(schema.path)/additionalProperties") }
        }
        for name in required where !declared.contains(where: { $0.name == name }) {
            guard let value = additionalValue else {
                throw schema.error("the required property \"\(name)\" is not in properties and additionalProperties allows no other; declare it under properties")
            }
            members.append(Member(name: name, required: true, value: value))
        }

        let ws = whitespace()
        let comma = Self.literal(",") + ws
        func pair(_ m: Member) -> [Grammar.Element] { Self.quotedLiteral(m.name) + Self.literal(":") + ws + m.value }
        var extra: [Grammar.Element]? = nil
        if let additionalValue {
            let key = keyExcluding(declared.map(\.name) + required)
            extra = [key] + Self.literal(":") + ws + additionalValue
        }
        // after[i]: what may follow once something is written and members before i are done;
        // first[i]: the non-empty ways to start with member i or a later one.
        let n = members.count
        var after = [[Grammar.Element]](repeating: [], count: n + 1)
        var first = [Alternatives](repeating: [], count: n + 1)
        if let extra {
            after[n] = builder.repeated(comma + extra, minimum: 0, maximum: nil, name: "\(schema.path)/additional")
            first[n] = [extra + after[n]]
        }
        for i in stride(from: n - 1, through: 0, by: -1) {
            let m = members[i]
            let next = after[i + 1]
            let with = comma + pair(m) + next
            after[i] = m.required ? [.rule(builder.fresh("\(schema.path)/after", [with]))]
                : [.rule(builder.fresh("\(schema.path)/after", [with, next]))]
            first[i] = [pair(m) + next] + (m.required ? [] : first[i + 1])
        }
        var alternatives: Alternatives = []
        if !members.contains(where: \.required) { alternatives.append(Self.literal("{") + ws + Self.literal("}")) }
        if !first[0].isEmpty {
            alternatives.append(Self.literal("{") + ws + wrap(first[0], name: "\(schema.path)/members") + ws + Self.literal("}"))
        }
        return alternatives
    }

    /// A quoted key that is none of `names` (whose values have schemas of their own): a trie
    /// of the names, leaving each node by a character no name continues with, or ending where
    /// no name ends.
    mutating func keyExcluding(_ names: [String]) -> Grammar.Element {
        let any = stringCharacter(.all)!
        let anyRest = builder.repeated([any], minimum: 0, maximum: nil, name: "key-chars")
        struct Node { var children: [(UInt32, Int)] = []; var terminal = false }
        var nodes = [Node()]
        for name in names {
            var at = 0
            for scalar in name.unicodeScalars {
                if let child = nodes[at].children.first(where: { $0.0 == scalar.value })?.1 {
                    at = child
                } else {
                    nodes.append(Node())
                    nodes[at].children.append((scalar.value, nodes.count - 1))
                    at = nodes.count - 1
                }
            }
            nodes[at].terminal = true
        }
        func rest(_ i: Int) -> [Grammar.Element] {
            var alternatives: Alternatives = nodes[i].terminal ? [] : [[]]
            let others = CodePointSet.all.subtracting(CodePointSet(nodes[i].children.map { $0.0...$0.0 }))
            if let c = stringCharacter(others) { alternatives.append([c] + anyRest) }
            for (scalar, child) in nodes[i].children {
                alternatives.append([stringCharacter(CodePointSet(scalar: scalar))!] + rest(child))
            }
            return [.rule(builder.fresh("key", alternatives))]
        }
        return .rule(builder.fresh("key", [Self.literal("\"") + rest(0) + Self.literal("\"")]))
    }

    /// A JSON Pointer token for `name` (`~` and `/` escaped).
    static func pointerToken(_ name: String) -> String {
        name.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    // MARK: Arrays

    /// An array schema: `prefixItems` (or draft 4's array `items`) position by position, then
    /// `items` (or `additionalItems`), between `minItems` and `maxItems` of them.
    mutating func arrayAlternatives(_ schema: SchemaObject) throws -> Alternatives {
        var prefix: [JSONValue] = []
        var prefixKey = "prefixItems"
        var rest: JSONValue = .bool(true)
        var restKey = "items"
        switch schema["items"] {
        case .array(let list)?:
            guard !schema.has("prefixItems") else { throw schema.error("items as an array (draft 4) and prefixItems together are ambiguous; use prefixItems") }
            prefix = list
            prefixKey = "items"
            rest = schema["additionalItems"] ?? .bool(true)
            restKey = "additionalItems"
        case let items?:
            rest = items
        case nil:
            break
        }
        if let p = schema["prefixItems"] {
            guard case .array(let list) = p else { throw schema.error("prefixItems must be an array of schemas") }
            prefix = list
        }
        let minimum = try schema.count("minItems") ?? 0
        let maxItems = try schema.count("maxItems")
        if let maxItems, maxItems < minimum { throw schema.error("maxItems \(maxItems) is below minItems \(minimum), so no array is valid") }

        // The positions that can hold a value: up to the first whose schema allows none.
        var values: [[Grammar.Element]] = []
        for (i, item) in prefix.enumerated() {
            let path = "\(schema.path)/\(prefixKey)/\(i)"
            let alternatives = try compile(item, at: path)
            if alternatives.isEmpty { break }
            values.append(wrap(alternatives, name: path))
        }
        var restValue: [Grammar.Element]? = nil
        if values.count == prefix.count {
            let path = "\(schema.path)/\(restKey)"
            let alternatives = try compile(rest, at: path)
            if !alternatives.isEmpty { restValue = wrap(alternatives, name: path) }
        }
        var limit: Int? = maxItems
        if restValue == nil { limit = min(limit ?? values.count, values.count) }
        if let limit, minimum > limit {
            throw schema.error("minItems \(minimum) cannot be met: at most \(limit) items can be valid here (prefixItems, items and maxItems)")
        }
        let ws = whitespace()
        let comma = Self.literal(",") + ws
        func item(_ i: Int) -> [Grammar.Element] { i < values.count ? values[i] : restValue! }
        // tail(i): what follows once i items are written.
        func tail(_ i: Int) -> [Grammar.Element] {
            if let limit, i >= limit { return [] }
            if i >= values.count {
                return builder.repeated(comma + restValue!, minimum: max(0, minimum - i), maximum: limit.map { $0 - i }, name: "\(schema.path)/items")
            }
            let next = comma + item(i) + tail(i + 1)
            return [.rule(builder.fresh("\(schema.path)/items", i >= minimum ? [next, []] : [next]))]
        }
        var alternatives: Alternatives = []
        if minimum == 0 { alternatives.append(Self.literal("[") + ws + Self.literal("]")) }
        if limit.map({ $0 >= 1 }) ?? true {
            alternatives.append(Self.literal("[") + ws + item(0) + tail(1) + ws + Self.literal("]"))
        }
        return alternatives
    }
}
