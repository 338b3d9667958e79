import Foundation
import HearthConstraints
import HearthTestSupport
import Testing

/// llama.cpp's example grammars (models/grammars, from scripts/fetch-models).
enum ExampleGrammars {
    static let names = ["arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"]

    static func source(_ name: String) throws -> String {
        try String(contentsOfFile: try TestFiles.model("grammars/\(name).gbnf"), encoding: .utf8)
    }
}

/// Feeds `text` to a fresh recognition of `grammar`; whether every byte is taken and the end
/// accepted.
func recognizes(_ grammar: CompiledGrammar, _ text: String) -> Bool {
    var state = grammar.start()
    return state.consume(Array(text.utf8), in: grammar) && state.isAccepting
}

/// Whether `text` can still grow into a match.
func isPrefix(_ grammar: CompiledGrammar, _ text: String) -> Bool {
    var state = grammar.start()
    return state.consume(Array(text.utf8), in: grammar)
}

/// A random walk through the grammar: at each step a random code point of a random class
/// among those the stacks' tops admit, ending when the state accepts and a coin says so, or
/// nothing can follow. Returns nil if the walk gets stuck.
func randomText(_ grammar: CompiledGrammar, _ random: inout SplitMix64, limit: Int = 300) -> String? {
    var state = grammar.start()
    var scalars: [Unicode.Scalar] = []
    while scalars.count < limit {
        let classes = state.nextCharacters(in: grammar)
        if state.isAccepting && (classes.isEmpty || Int.random(in: 0..<3, using: &random) == 0) { break }
        guard let cls = classes.randomElement(using: &random) else { return nil }
        var picked: Unicode.Scalar? = nil
        for _ in 0..<200 {
            let c: UInt32
            if !cls.negated, let range = cls.ranges.randomElement(using: &random) {
                c = UInt32.random(in: range.lowerBound...min(range.upperBound, range.lowerBound + 0x2000), using: &random)
            } else {
                c = Int.random(in: 0..<4, using: &random) == 0 ? UInt32.random(in: 0xA0...0x3000, using: &random)
                    : UInt32.random(in: 0x09...0x7E, using: &random)
            }
            if let scalar = Unicode.Scalar(c), cls.matches(c) {
                picked = scalar
                break
            }
        }
        guard let scalar = picked else { return nil }
        guard state.consume(Array(String(scalar).utf8), in: grammar) else { return nil }
        scalars.append(scalar)
    }
    return state.isAccepting ? String(String.UnicodeScalarView(scalars)) : nil
}

@Suite struct GBNFTests {
    /// Every example grammar of llama.cpp parses.
    @Test(arguments: ExampleGrammars.names)
    func exampleGrammarsParse(name: String) throws {
        let grammar = try Grammar(gbnf: try ExampleGrammars.source(name))
        #expect(grammar.rules.count > 1)
    }

    /// Texts each grammar matches and texts it does not, checked by the pushdown recognizer and
    /// by an Earley parser.
    @Test func examplesAcceptAndRefuse() throws {
        let cases: [(String, [String], [String])] = [
            ("arithmetic", ["1+2=3\n", "(a *b) -c1=x\n", "x = (1)\n"], ["1+=2\n", "1+2\n", "+1=2\n"]),
            ("chess", ["1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O Qxd1+\n"], ["1. e4 e5\n", "1. e9 e5\n2. a1 a2\n"]),
            ("json", ["{}", "{\"a\": [1, 2.5e3, true, null, \"x\\u00e9\"]}", "{\"k\":{\"n\":-0.5}}\n  "], ["[]", "{\"a\":}", "{\"a\" 1}", "{'a': 1}"]),
            ("json_arr", ["[\n]", "[\n{\"a\": 1},\n[2]]"], ["{}", "[\n1,]"]),
            ("list", ["- milk\n- eggs\n"], ["milk\n", "- \n"]),
            ("japanese", ["こんにちは", "カタカナ ひらがな\n漢字"], ["hello", "こんにちは!"]),
            ("c", ["int main(){return 0;}", "float f(int x){x = x+1;return x;}"], ["int main(){return 0}", "main(){}"]),
        ]
        for (name, good, bad) in cases {
            let grammar = try Grammar(gbnf: try ExampleGrammars.source(name))
            let compiled = CompiledGrammar(grammar), earley = EarleyRecognizer(grammar)
            for text in good {
                let (pushdown, chart) = (recognizes(compiled, text), earley.matches(text))
                #expect(pushdown, "\(name) refuses \(text.debugDescription)")
                #expect(chart, "Earley: \(name) refuses \(text.debugDescription)")
            }
            for text in bad {
                let (pushdown, chart) = (recognizes(compiled, text), earley.matches(text))
                #expect(!pushdown, "\(name) takes \(text.debugDescription)")
                #expect(!chart, "Earley: \(name) takes \(text.debugDescription)")
            }
        }
    }

    /// Random walks through each grammar give texts the Earley parser accepts, and every
    /// prefix of them is a prefix to the pushdown recognizer.
    @Test(arguments: ExampleGrammars.names)
    func randomWalksAgreeWithEarley(name: String) throws {
        let grammar = try Grammar(gbnf: try ExampleGrammars.source(name))
        let compiled = CompiledGrammar(grammar), earley = EarleyRecognizer(grammar)
        var random = SplitMix64(seed: UInt64(name.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        var produced = 0
        for _ in 0..<40 {
            guard let text = randomText(compiled, &random, limit: 120) else { continue }
            produced += 1
            let (pushdown, chart) = (recognizes(compiled, text), earley.matches(text))
            #expect(chart, "\(name): \(text.debugDescription)")
            #expect(pushdown)
        }
        #expect(produced >= 10)
    }

    @Test func syntaxAndMeaning() throws {
        // Repetition bounds, classes, escapes, any character, groups and comments.
        let g = try Grammar(gbnf: """
            # a comment
            root ::= "a"{2,3} [x-z]+ ( "-" | "\\u00e9" ) . item?  # trailing comment
            item ::= [^\\n]{0,2} "\\n"
            """)
        let c = CompiledGrammar(g)
        #expect(recognizes(c, "aax-é"))
        #expect(recognizes(c, "aaazz-Q\n"))
        #expect(recognizes(c, "aaxé!ab\n"))
        #expect(!recognizes(c, "ax-q"))
        #expect(!recognizes(c, "aaaax-q"))
        #expect(!recognizes(c, "aax-qabc\n"))
        // An alternative on the next line after |.
        let multi = try Grammar(gbnf: "root ::= \"a\" |\n  \"b\"\n")
        #expect(recognizes(CompiledGrammar(multi), "b"))
        // Exact counts and open ranges.
        let counts = CompiledGrammar(try Grammar(gbnf: "root ::= [0-9]{3} \"-\" [a-f]{2,}"))
        #expect(recognizes(counts, "123-ab") && recognizes(counts, "123-abcdef"))
        #expect(!recognizes(counts, "12-ab") && !recognizes(counts, "123-a"))
        // Multi-byte characters split across bytes: a prefix waits for the rest.
        let snow = CompiledGrammar(try Grammar(gbnf: "root ::= \"☃\"+"))
        var state = snow.start()
        #expect(state.step(0xE2, in: snow) && state.step(0x98, in: snow) && !state.isAccepting)
        #expect(state.step(0x83, in: snow) && state.isAccepting)
        #expect(!isPrefix(snow, "☂"))
    }

    @Test func errorsSayWhatIsWrong() {
        func message(_ source: String) -> String {
            do {
                _ = try Grammar(gbnf: source)
                return "parsed"
            } catch {
                return "\(error)"
            }
        }
        #expect(message("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"").contains("left-recursive"))
        #expect(message("root ::= missing").contains("missing"))
        #expect(message("root ::= \"a").contains("not closed"))
        #expect(message("root = \"a\"").contains("::="))
        #expect(message("root ::= [a-").contains("line 1"))
        #expect(message("root ::= \"a\"{3,1}").contains("maximum"))
        #expect(message("other ::= \"a\"").contains("root"))
        #expect(message("root ::= <think>").contains("vocabulary"))
    }
}
