import Foundation
import HearthConstraints
import HearthCore
import HearthTestSupport
import Testing

/// The grammar of a schema given as JSON text.
func schemaGrammar(_ text: String, _ options: JSONSchemaOptions = .init()) throws -> CompiledGrammar {
    CompiledGrammar(try Grammar(jsonSchema: try JSONValue(parsing: text), options: options))
}

/// The error message compiling `text` gives, or "compiled".
func schemaError(_ text: String) -> String {
    do {
        _ = try Grammar(jsonSchema: try JSONValue(parsing: text))
        return "compiled"
    } catch {
        return "\(error)"
    }
}

@Suite struct JSONSchemaTests {
    /// Each fixture's valid examples (compact and pretty-printed) are matched by the grammar and
    /// by an Earley parser, its invalid ones by neither; Python's jsonschema agrees on every
    /// example, and accepts every text of 40 random walks through the grammar.
    @Test(arguments: JSONSchemaFixtures.names)
    func fixturesAgreeWithPythonJSONSchema(name: String) throws {
        let schema = try JSONSchemaFixtures.schema(name)
        let grammar = try Grammar(jsonSchema: schema)
        let compiled = CompiledGrammar(grammar), earley = EarleyRecognizer(grammar)
        let valid = try JSONSchemaFixtures.examples(name, "valid"), invalid = try JSONSchemaFixtures.examples(name, "invalid")
        #expect(valid.count >= 2 && invalid.count >= 2)
        let validTexts = valid.flatMap { [$0.jsonText, JSONSchemaFixtures.pretty($0)] }
        let invalidTexts = invalid.flatMap { [$0.jsonText, JSONSchemaFixtures.pretty($0)] }
        for text in validTexts {
            #expect(recognizes(compiled, text), "\(name): the grammar refuses valid \(text)")
            #expect(earley.matches(text), "\(name): Earley refuses valid \(text)")
        }
        for text in invalidTexts {
            #expect(!recognizes(compiled, text), "\(name): the grammar takes invalid \(text)")
        }
        var random = SplitMix64(seed: UInt64(name.utf8.reduce(7) { $0 &* 31 &+ UInt64($1) }))
        var walks: [String] = []
        for _ in 0..<40 {
            if let text = randomText(compiled, &random, limit: 4000) { walks.append(text) }
        }
        #expect(walks.count >= 20, "\(name): only \(walks.count) of 40 random walks finished")
        for text in walks {
            #expect((try? JSONValue(parsing: text)) != nil, "\(name): a walk is not JSON: \(text)")
        }
        let verdicts = try PythonJSONSchema.validate(schema: schema, documents: validTexts + invalidTexts + walks)
        for (text, verdict) in zip(validTexts, verdicts) {
            #expect(verdict == nil, "\(name): jsonschema refuses the valid example \(text): \(verdict ?? "")")
        }
        for (text, verdict) in zip(invalidTexts, verdicts.dropFirst(validTexts.count)) {
            #expect(verdict != nil, "\(name): jsonschema takes the invalid example \(text)")
        }
        for (text, verdict) in zip(walks, verdicts.dropFirst(validTexts.count + invalidTexts.count)) {
            #expect(verdict == nil, "\(name): a random walk is invalid: \(text): \(verdict ?? "")")
        }
    }

    /// Keywords the compiler cannot enforce are refused with their name and where they are.
    @Test(arguments: [
        (##"{"type":"object","properties":{"age":{"type":"integer","multipleOf":5}}}"##, "multipleOf", "#/properties/age"),
        (#"{"type":"object","patternProperties":{"^x":{"type":"string"}}}"#, "patternProperties", "#"),
        (#"{"if":{"type":"string"},"then":{"maxLength":3}}"#, "if", "#"),
        (#"{"not":{"type":"null"}}"#, "not", "#"),
        (#"{"type":"array","items":{"type":"integer"},"uniqueItems":true}"#, "uniqueItems", "#"),
        (#"{"type":"object","dependentRequired":{"a":["b"]}}"#, "dependentRequired", "#"),
        (#"{"type":"object","minProperties":1}"#, "minProperties", "#"),
        (##"{"$defs":{"x":{"type":"object","propertyNames":{"maxLength":3}}},"$ref":"#/$defs/x"}"##, "propertyNames", "#/$defs/x"),
        (##"{"type":"array","items":{"anyOf":[{"type":"string","contentEncoding":"base64"}]}}"##, "contentEncoding", "#/items/anyOf/0"),
        (#"{"type":"array","contains":{"type":"integer"}}"#, "contains", "#"),
        (##"{"type":"object","properties":{"a/b":{"type":"string","nullable":true}}}"##, "nullable", "#/properties/a~1b"),
    ])
    func unsupportedKeywordsAreRefusedByName(schema: String, keyword: String, path: String) {
        let message = schemaError(schema)
        #expect(message.contains("unsupported JSON Schema keyword \"\(keyword)\" at \(path)"), "\(message)")
    }

    /// Schemas that cannot be compiled say why.
    @Test(arguments: [
        (##"{"$ref":"#/$defs/missing"}"##, "points to nothing"),
        (#"{"$ref":"https://example.com/schema.json"}"#, "outside the schema"),
        (##"{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}"##, "leads back to itself"),
        (#"{"type":"strin"}"#, "unknown type \"strin\""),
        (#"{"type":"integer","minimum":10,"maximum":5}"#, "no integer lies between"),
        (#"{"type":"integer","exclusiveMinimum":4,"exclusiveMaximum":5}"#, "no integer lies between"),
        (#"{"type":"number","minimum":3,"exclusiveMaximum":3}"#, "no number lies between"),
        (#"{"type":"string","minLength":5,"maxLength":2}"#, "maxLength 2 is below minLength 5"),
        (#"{"type":"array","minItems":3,"maxItems":1}"#, "maxItems 1 is below minItems 3"),
        (#"{"type":"array","prefixItems":[{"type":"null"}],"items":false,"minItems":2}"#, "minItems 2 cannot be met"),
        (#"{"type":"object","properties":{"a":false},"required":["a"]}"#, "allows no value"),
        (#"{"type":"object","required":["a"],"additionalProperties":false}"#, "not in properties"),
        (#"{"enum":[]}"#, "non-empty array"),
        (#"{"type":"string","format":"hostname"}"#, "unsupported JSON Schema format \"hostname\""),
        (#"{"type":"string","pattern":"^(?=a)b$"}"#, "lookahead"),
        (#"{"type":"string","pattern":"^(a)\\1$"}"#, "backreference"),
        (#"{"type":"string","pattern":"^a\\bb$"}"#, "word boundary"),
        (#"{"type":"string","pattern":"(?i)abc"}"#, "inline flags"),
        (#"{"type":"string","pattern":"^[a-z]+$","maxLength":5}"#, "write the bounds into the pattern"),
        (##"{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["next"]}},"$ref":"#/$defs/n"}"##, "no finite value"),
        (#"{"allOf":[{"type":"string"},{"type":"integer"}]}"#, "no type in common"),
        (#"{"allOf":[{"type":"string","pattern":"^a$"},{"pattern":"^b$"}]}"#, "\"pattern\" in ways that cannot be merged"),
        (#"false"#, "allows no value at all"),
        (#"3"#, "must be an object or a boolean"),
        (#"{"properties":{"a":{"$id":"other"}}}"#, "unsupported JSON Schema keyword \"$id\" at #/properties/a"),
    ])
    func errorsSayWhatIsWrong(schema: String, expected: String) {
        let message = schemaError(schema)
        #expect(message.contains(expected), "\(schema): \(message)")
    }

    /// Integer bounds are exact: every integer around and between the bounds of many ranges is
    /// taken exactly when it lies within them.
    @Test func integerRangesAreExact() throws {
        var random = SplitMix64(seed: 11)
        var ranges: [(Int?, Int?)] = [(0, 0), (-5, 5), (-40, 125), (1, 9), (10, 99), (0, 1000), (-1000, -999), (99, 101), (1234, 56789),
                                      (-987, 65), (nil, -3), (7, nil), (nil, 0), (0, nil), (-100, nil), (nil, 250)]
        for _ in 0..<30 {
            let a = Int.random(in: -20000...20000, using: &random), b = Int.random(in: -20000...20000, using: &random)
            ranges.append((min(a, b), max(a, b)))
        }
        for (low, high) in ranges {
            var members: [String] = [#""type":"integer""#]
            if let low { members.append("\"minimum\":\(low)") }
            if let high { members.append("\"maximum\":\(high)") }
            let grammar = try schemaGrammar("{" + members.joined(separator: ",") + "}")
            let center = low ?? high ?? 0
            var probes = Array((center - 120)...(center + 120)) + [low, high].compactMap { $0 }.flatMap { [$0 - 1, $0, $0 + 1] }
            if let low, let high { probes += (0..<200).map { _ in Int.random(in: low...high, using: &random) } }
            probes += (0..<100).map { _ in Int.random(in: -100_000...100_000, using: &random) }
            for n in probes {
                let inside = (low.map { n >= $0 } ?? true) && (high.map { n <= $0 } ?? true)
                #expect(recognizes(grammar, String(n)) == inside, "\(String(describing: low))...\(String(describing: high)): \(n)")
            }
            // Leading zeros, fractions and exponents are never integers here.
            #expect(!recognizes(grammar, "007") && !recognizes(grammar, "1.0") && !recognizes(grammar, "1e2"))
        }
        // Exclusive bounds, fractional bounds, and bounds beyond 64 bits.
        let g = try schemaGrammar(#"{"type":"integer","exclusiveMinimum":-2.5,"exclusiveMaximum":10}"#)
        #expect((-2...9).allSatisfy { recognizes(g, String($0)) } && !recognizes(g, "-3") && !recognizes(g, "10"))
        let big = try schemaGrammar(#"{"type":"integer","minimum":1e20,"maximum":1.5e20}"#)
        #expect(recognizes(big, "100000000000000000000") && recognizes(big, "150000000000000000000"))
        #expect(!recognizes(big, "99999999999999999999") && !recognizes(big, "150000000000000000001"))
    }

    /// Decimal bounds are exact for decimals of up to 15 significant digits: random decimals
    /// near the bounds are taken exactly when they lie within them (compared as doubles, as
    /// Python's jsonschema compares them).
    @Test func decimalBoundsAreExact() throws {
        var random = SplitMix64(seed: 5)
        let cases: [(String, Double?, Bool, Double?, Bool)] = [
            ("0.01 ... 999.99", 0.01, false, 999.99, false), ("(0 ... 100]", 0, true, 100, false), ("-90 ... 90", -90, false, 90, false),
            ("(-1.5 ... -0.25)", -1.5, true, -0.25, true), ("[3.14159 ...", 3.14159, false, nil, false), ("... 2.5e-3)", nil, false, 0.0025, true),
            ("[0.1 ... 0.1]", 0.1, false, 0.1, false), ("(12.0625 ... 12.5)", 12.0625, true, 12.5, true), ("[-0.001 ... 1e-3]", -0.001, false, 0.001, false),
        ]
        for (label, low, lowExclusive, high, highExclusive) in cases {
            var members: [String] = [#""type":"number""#]
            if let low { members.append("\"\(lowExclusive ? "exclusiveMinimum" : "minimum")\":\(low)") }
            if let high { members.append("\"\(highExclusive ? "exclusiveMaximum" : "maximum")\":\(high)") }
            let grammar = try schemaGrammar("{" + members.joined(separator: ",") + "}")
            var probes: [String] = ["0", "-0.5", "1", "0.0000001", "1000", "-1000"]
            for bound in [low, high].compactMap({ $0 }) {
                for digits in 0...6 {
                    let step = pow(10, -Double(digits))
                    for k in -3...3 { probes.append(String(format: "%.\(digits)f", bound + Double(k) * step)) }
                }
            }
            for _ in 0..<300 {
                let center = low ?? high ?? 0
                let x = center + Double.random(in: -2...2, using: &random) * (Bool.random(using: &random) ? 1 : 100)
                probes.append(String(format: "%.\(Int.random(in: 0...5, using: &random))f", x))
            }
            for text in probes {
                // Python writes no "-0" and no trailing fraction zeros; the grammar wants neither.
                guard let canonical = canonicalDecimal(text) else { continue }
                let value = Double(canonical)!
                let inside = (low.map { lowExclusive ? value > $0 : value >= $0 } ?? true)
                    && (high.map { highExclusive ? value < $0 : value <= $0 } ?? true)
                #expect(recognizes(grammar, canonical) == inside, "\(label): \(canonical)")
            }
            #expect(!recognizes(grammar, "1e2") && !recognizes(grammar, "01.5"))
        }
    }

    /// Patterns: strings made by random walks through a pattern's grammar match the pattern in
    /// Python, and strings the pattern refuses are refused.
    @Test func patternsMatchAsPythonMatchesThem() throws {
        let patterns: [(String, [String], [String])] = [
            (#"^[a-c]+x?$"#, ["a", "abcx", "cc"], ["", "x", "abd", "ax x"]),
            (#"ab"#, ["ab", "xxabyy", "\nab\n"], ["a", "ba", "a b"]),
            (#"^ab|cd$"#, ["abz", "zcd", "ab"], ["zab", "cdz"]),
            (#"^(?:\d{3}-){1,2}\d{2}$"#, ["123-45", "123-456-78"], ["12-45", "123-456-789-12", "١٢٣-45"]),
            (#"^\w+\s\W$"#, ["word !", "a_1\t?"], ["word a", "é !", "word  !"]),
            (#"^[^\d\s]{2,}$"#, ["ab", "?!"], ["a1", "a b", "a", "é?"]),
            (#"^\D\S$"#, ["ab", "-x"], ["1a", "a "]),
            (#"^.{2}$"#, ["ab", "é\t"], ["a\n", "abc"]),
            (#"^a.*z$"#, ["az", "a-\u{1F600}-z"], ["a\nz", "za"]),
            (#"^\u00e9+\x41{2,3}\.$"#, ["éAA.", "ééAAA."], ["éA.", "eAA."]),
            (#"^[\]\-\\a-]{1,3}$"#, ["]", "-\\a", "a"], ["b", ""]),
            (#"^"\\\n\t$"#, ["\"\\\n\t"], ["\"\\n\t"]),
            (#"^(?P<year>[0-9]{4})-([0-9]{2})$"#, ["2024-05"], ["2024-5"]),
            (#"^x{,2}y{2,}?$"#, ["yy", "xxyyy"], ["xxxyy", "xy"]),
            (#"^a{2}{$"#, ["aa{"], ["aa"]),
        ]
        // ECMA-262's named groups, which Python 3.11 does not read.
        #expect(recognizes(try schemaGrammar(#"{"type":"string","pattern":"^(?<m>[0-9]{2})$"}"#), #""05""#))
        for (pattern, good, bad) in patterns {
            let schema = JSONValue.object([("type", .string("string")), ("pattern", .string(pattern))])
            let grammar = CompiledGrammar(try Grammar(jsonSchema: schema))
            func quoted(_ s: String) -> String { JSONValue.string(s).jsonText }
            for s in good { #expect(recognizes(grammar, quoted(s)), "\(pattern) refuses \(s.debugDescription)") }
            for s in bad { #expect(!recognizes(grammar, quoted(s)), "\(pattern) takes \(s.debugDescription)") }
            var random = SplitMix64(seed: UInt64(pattern.utf8.count))
            var walks: [String] = []
            for _ in 0..<30 { if let t = randomText(grammar, &random, limit: 3000) { walks.append(t) } }
            #expect(walks.count >= 10, "\(pattern): \(walks.count) walks")
            // Python must take the good examples; the bad ones include strings only Python takes
            // (\d on Arabic digits, \w on é), which the grammar refuses on purpose.
            let examples = good.map(quoted)
            let verdicts = try PythonJSONSchema.validate(schema: schema, documents: examples + walks)
            for (text, verdict) in zip(examples, verdicts) {
                #expect(verdict == nil, "\(pattern): Python refuses \(text): \(verdict ?? "")")
            }
            for (text, verdict) in zip(walks, verdicts.dropFirst(examples.count)) {
                #expect(verdict == nil, "\(pattern): \(text) \(verdict ?? "")")
            }
        }
    }

    /// Properties stay in the written order; optional ones may be left out, required ones not;
    /// keys are written once; additional keys come after, and never as a declared name.
    @Test func objectsKeepOrderAndExcludeDeclaredKeys() throws {
        let schema = ##"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"},"d":{"type":"integer"}},"required":["b","d"],"additionalProperties":{"type":"boolean"}}"##
        let g = try schemaGrammar(schema, JSONSchemaOptions(whitespace: .compact))
        for text in [#"{"b":1,"d":2}"#, #"{"a":0,"b":1,"c":3,"d":2}"#, #"{"b":1,"c":3,"d":2,"e":true}"#, #"{"b":1,"d":2,"ab":false,"a ":true,"":true}"#,
                     ##"{"a":0,"b":1,"d":2,"d2":true}"##] {
            #expect(recognizes(g, text), "\(text)")
        }
        for text in [#"{"d":2,"b":1}"#, #"{"b":1}"#, #"{"a":0,"d":2}"#, #"{"b":1,"b":1,"d":2}"#, #"{"b":1,"d":2,"a":true}"#,
                     ##"{"b":1,"d":2,"c":true}"##, ##"{"b":1,"d":2,"e":1}"##, ##"{"e":true,"b":1,"d":2}"##, ##"{"b":1,"d":2,}"##, ##"{,"b":1,"d":2}"##] {
            #expect(!recognizes(g, text), "\(text)")
        }
        // Without additionalProperties, by default no other key; with the option, any.
        let closed = try schemaGrammar(#"{"properties":{"a":{"type":"null"}}}"#)
        #expect(recognizes(closed, "{}") && recognizes(closed, #"{"a":null}"#) && !recognizes(closed, #"{"b":1}"#))
        let open = try schemaGrammar(#"{"properties":{"a":{"type":"null"}}}"#, JSONSchemaOptions(additionalPropertiesByDefault: true))
        #expect(recognizes(open, #"{"a":null,"b":[1,{"c":"d"}]}"#) && !recognizes(open, #"{"a":1}"#))
    }

    /// Whitespace: flexible allows a space or a newline and an indent between tokens, never at
    /// the ends; compact allows none.
    @Test func whitespaceAsDocumented() throws {
        let schema = ##"{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]}"##
        let flexible = try schemaGrammar(schema), compact = try schemaGrammar(schema, JSONSchemaOptions(whitespace: .compact))
        for text in [#"{"a":[1,2]}"#, "{\n  \"a\": [\n    1,\n    2\n  ]\n}", #"{ "a": [ 1, 2 ] }"#, "{\"a\":[\t1]}".replacingOccurrences(of: "\t", with: "\n\t")] {
            #expect(recognizes(flexible, text), "\(text)")
        }
        for text in [#" {"a":[]}"#, #"{"a":[]} "#, "{\"a\":[]}\n", #"{"a" :[]}"#, #"{"a":[1 ,2]}"#, #"{  "a":[]}"#,
                     "{\n" + String(repeating: " ", count: 21) + "\"a\":[]}"] {
            #expect(!recognizes(flexible, text), "\(text.debugDescription)")
        }
        #expect(recognizes(compact, #"{"a":[1,2]}"#) && !recognizes(compact, #"{"a": [1,2]}"#))
    }

    /// Strings: one spelling per string (escapes only where JSON needs them), lengths in
    /// characters, formats.
    @Test func stringsAndFormats() throws {
        let g = try schemaGrammar(#"{"type":"string","minLength":2,"maxLength":3}"#)
        for text in [#""ab""#, #""日本語""#, #""\n\"""#, #""\u001fa""#, #""\u001Fa""#, #""a\\b""#] { #expect(recognizes(g, text), "\(text)") }
        for text in [#""a""#, #""abcd""#, #""\u0061b""#, #""a\/""#, "\"a\u{1}\"", #""\x""#] { #expect(!recognizes(g, text), "\(text)") }
        let uuid = try schemaGrammar(#"{"type":"string","format":"uuid"}"#)
        #expect(recognizes(uuid, #""123e4567-E89B-12d3-a456-426614174000""#) && !recognizes(uuid, #""123e4567-e89b-12d3-a456-42661417400""#))
        let date = try schemaGrammar(#"{"type":"string","format":"date"}"#)
        for leap in ["2000", "2024", "1600", "0004", "2400", "1996"] { #expect(recognizes(date, "\"\(leap)-02-29\"")) }
        for common in ["1900", "2023", "2100", "0001", "1800"] { #expect(!recognizes(date, "\"\(common)-02-29\"")) }
        #expect(recognizes(date, #""2023-12-31""#) && !recognizes(date, #""2023-11-31""#) && !recognizes(date, #""0000-01-01""#))
    }

    /// anyOf with keywords beside it, allOf merging objects, $ref with siblings, nested
    /// recursion, and enum values the rest of the schema refuses.
    @Test func combinations() throws {
        let sides = try schemaGrammar(#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}"#,
                                      JSONSchemaOptions(whitespace: .compact))
        #expect(recognizes(sides, #"{"a":1}"#) && recognizes(sides, #"{"b":1}"#) && recognizes(sides, #"{"a":1,"b":2}"#) && !recognizes(sides, "{}"))
        let merged = try schemaGrammar(#"{"allOf":[{"properties":{"a":{"type":"integer","minimum":0}},"required":["a"]},{"properties":{"a":{"maximum":5},"b":{"type":"string"}},"additionalProperties":false}]}"#,
                                       JSONSchemaOptions(whitespace: .compact))
        #expect(recognizes(merged, #"{"a":5}"#) && recognizes(merged, #"{"a":0,"b":"x"}"#))
        #expect(!recognizes(merged, #"{"a":6}"#) && !recognizes(merged, #"{"a":-1}"#) && !recognizes(merged, #"{"b":"x"}"#))
        // A property the other member does not declare is held to its additionalProperties.
        let held = try schemaGrammar(#"{"allOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"b":{"type":"integer"}},"additionalProperties":false}]}"#,
                                     JSONSchemaOptions(whitespace: .compact))
        #expect(recognizes(held, #"{"b":1}"#) && !recognizes(held, #"{"a":1}"#))
        let refSiblings = try schemaGrammar(##"{"$defs":{"n":{"type":"integer","minimum":0}},"$ref":"#/$defs/n","maximum":3}"##)
        #expect(recognizes(refSiblings, "3") && !recognizes(refSiblings, "4") && !recognizes(refSiblings, "-1"))
        let root = try schemaGrammar(##"{"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]},"maxItems":2}"##, JSONSchemaOptions(whitespace: .compact))
        #expect(recognizes(root, "[[1,[]],2]") && !recognizes(root, "[1,2,3]") && !recognizes(root, "[[1,2,3]]"))
        let filtered = try schemaGrammar(#"{"type":"integer","enum":[1,5,"5",12,2.5],"maximum":10}"#)
        #expect(recognizes(filtered, "1") && recognizes(filtered, "5") && !recognizes(filtered, "12") && !recognizes(filtered, "\"5\"") && !recognizes(filtered, "2.5"))
        // oneOf is anyOf: a value both alternatives match is accepted (documented).
        let overlap = try schemaGrammar(#"{"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]}"#)
        #expect(recognizes(overlap, "3") && recognizes(overlap, "-3") && recognizes(overlap, "0.5"))
    }

    /// The ready-made grammars take any JSON value / object and nothing else.
    @Test func anyValueAndAnyObject() throws {
        let value = CompiledGrammar(Grammar.anyJSONValue), object = CompiledGrammar(Grammar.anyJSONObject)
        for text in ["null", "-0.5e+3", "\"x\"", "[]", "{\"a\": [true, {\"b\": null}]}", "[\n  1,\n  \"two\"\n]"] {
            #expect(recognizes(value, text), "\(text)")
        }
        for text in ["nul", "01", "[1,]", "{\"a\"}", "'x'", "{} "] { #expect(!recognizes(value, text), "\(text)") }
        #expect(recognizes(object, "{\"a\": 1}") && !recognizes(object, "[1]") && !recognizes(object, "1"))
        var random = SplitMix64(seed: 3)
        var walks: [String] = []
        for _ in 0..<40 { if let t = randomText(value, &random, limit: 2000) { walks.append(t) } }
        for text in walks { #expect((try? JSONValue(parsing: text)) != nil, "\(text)") }
        #expect(walks.count >= 20)
    }

    /// The same schema compiles to the same grammar (the engine caches programs by grammar).
    @Test func compilingIsDeterministic() throws {
        for name in JSONSchemaFixtures.names {
            let schema = try JSONSchemaFixtures.schema(name)
            #expect(try Grammar(jsonSchema: schema) == Grammar(jsonSchema: schema), "\(name)")
        }
    }
}

/// Decimal text as Python's json.dumps writes a float's digits: no "-0", no trailing zeros in
/// the fraction (and no fraction of zeros).
func canonicalDecimal(_ text: String) -> String? {
    var s = text
    if s.contains(".") {
        while s.hasSuffix("0") { s.removeLast() }
        if s.hasSuffix(".") { s.removeLast() }
    }
    if s == "-0" { s = "0" }
    guard Double(s) != nil else { return nil }
    return s
}
