import HearthConstraints
import HearthCore
import Testing

/// The shortest completion a grammar leaves: each rule's minimum length in bytes, and from a
/// recognizer state the fewest bytes to a complete match.
@Suite struct GrammarBudgetTests {
    /// The shortest completion after `prefix` is taken by a fresh recognition of `source`.
    func shortest(_ source: String, after prefix: String = "") throws -> Int {
        try shortest(source, afterBytes: Array(prefix.utf8))
    }

    func shortest(_ source: String, afterBytes prefix: [UInt8]) throws -> Int {
        let grammar = CompiledGrammar(try Grammar(gbnf: source))
        var state = grammar.start()
        let taken = state.consume(prefix, in: grammar)
        #expect(taken, "\(prefix.debugDescription)")
        return grammar.shortestCompletion(state)
    }

    func rootLength(_ source: String) throws -> Int {
        let grammar = try Grammar(gbnf: source)
        return grammar.minimumLengths()[grammar.root]
    }

    @Test func literals() throws {
        #expect(try rootLength(#"root ::= "abc""#) == 3)
        #expect(try shortest(#"root ::= "abc""#) == 3)
        #expect(try shortest(#"root ::= "abc""#, after: "a") == 2)
        #expect(try shortest(#"root ::= "abc""#, after: "abc") == 0)
        // Bytes, not characters: é is two, 日 three.
        #expect(try rootLength(#"root ::= "é日""#) == 5)
        #expect(try shortest(#"root ::= "é日""#, after: "\u{E9}") == 3)
        // Inside 日 (E6 97 A5): its last two bytes, then x.
        #expect(try shortest(#"root ::= "é日" "x""#, afterBytes: [0xC3, 0xA9, 0xE6]) == 3)
    }

    @Test func alternativesTakeTheShortest() throws {
        #expect(try rootLength(#"root ::= "abcd" | "xy" | "pqr""#) == 2)
        #expect(try shortest(#"root ::= "abcd" | "xy" | "abz""#, after: "a") == 2)
        #expect(try shortest("root ::= a \"-\" b\na ::= \"aaa\" | \"q\"\nb ::= [0-9] [0-9]") == 4)
    }

    @Test func characterClassesCountTheirSmallestCodePoint() throws {
        #expect(try rootLength(#"root ::= [a-z]"#) == 1)
        #expect(try rootLength(#"root ::= [é-ü]"#) == 2)
        #expect(try rootLength(#"root ::= [^"\\]"#) == 1)
        #expect(try rootLength(#"root ::= [^\x00-\x7F]"#) == 2)
    }

    @Test func recursionTakesItsWayOut() throws {
        let nested = #"root ::= "(" root ")" | "x""#
        #expect(try rootLength(nested) == 1)
        #expect(try shortest(nested, after: "((") == 3)
        #expect(try shortest(nested, after: "(((x") == 3)
        let list = "root ::= \"[\" item \"]\"\nitem ::= \"n\" | \"{\" root \"}\""
        #expect(try rootLength(list) == 3)
        #expect(try shortest(list, after: "[{[{") == 7)
    }

    @Test func repetition() throws {
        #expect(try rootLength(#"root ::= "a" [0-9]* "b""#) == 2)
        #expect(try shortest(#"root ::= "a" [0-9]* "b""#, after: "a123") == 1)
        #expect(try rootLength(#"root ::= [0-9]+"#) == 1)
        #expect(try rootLength(#"root ::= "x"{2,4} "y"?"#) == 2)
        #expect(try shortest(#"root ::= "x"{2,4} "y"?"#, after: "x") == 1)
        #expect(try shortest(#"root ::= ("ab" ",")* "ab""#, after: "ab,a") == 1)
    }

    /// A JSON schema of a recursive tree: deep inside it, closing takes every bracket.
    @Test func recursiveSchema() throws {
        let schema = try JSONValue(parsing: ##"{"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["value"], "additionalProperties": false}}, "$ref": "#/$defs/node"}"##)
        let grammar = CompiledGrammar(try Grammar(jsonSchema: schema))
        var state = grammar.start()
        let start = grammar.shortestCompletion(state)
        #expect(start == #"{"value":0}"#.utf8.count)
        let taken = state.consume(Array(#"{"value": 1, "children": [{"value": 2, "children": ["#.utf8), in: grammar)
        #expect(taken)
        #expect(grammar.shortestCompletion(state) == "]}]}".utf8.count)
    }

    /// Counted in tokens of a vocabulary whose single-byte tokens are `single`: a class costs
    /// one token when one of its ASCII characters has one, and a way that needs a byte without
    /// a token of its own is no way.
    @Test func tokensOfAVocabularyWithoutSomeBytes() throws {
        func tokens(_ source: String, missing: [UInt8]) throws -> Int {
            let grammar = try Grammar(gbnf: source)
            var single = [Bool](repeating: true, count: 256)
            for byte in missing { single[Int(byte)] = false }
            return grammar.minimumLengths { Grammar.minimumTokens(of: $0, single: single) }[grammar.root]
        }
        #expect(try tokens(#"root ::= [a-c] "x""#, missing: []) == 2)
        #expect(try tokens(#"root ::= [a-c] "x""#, missing: Array("ab".utf8)) == 2)
        #expect(try tokens(#"root ::= [a-c] "x" | "yyy""#, missing: Array("abc".utf8)) == 3)
        #expect(try tokens(#"root ::= [a-c] "x""#, missing: Array("abc".utf8)) == Grammar.unreachableLength)
        #expect(try tokens(#"root ::= [^\x00-\x7F]"#, missing: []) == 2)
        #expect(try tokens(#"root ::= [^\x00-\x7F]"#, missing: Array(0xC2...0xDF) + Array(0xE0...0xEF)) == 4)
        #expect(try tokens(#"root ::= "é""#, missing: [0xA9]) == Grammar.unreachableLength)
    }
}
