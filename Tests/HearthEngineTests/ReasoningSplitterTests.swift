import Foundation
import HearthEngine
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

/// The streaming splitter against a whole-text twin written apart from it, over every way of
/// cutting the outputs into pieces: at one or two places, into single scalars, at random, and
/// token by token as a real tokenizer (Qwen2's, whose `<think>` is several tokens) cuts them.
@Suite struct ReasoningSplitterTests {
    /// Outputs as reasoning models write them, and the edge cases around them.
    static let outputs: [String] = [
        "<think>\nThe user greets me. I should greet back.\n</think>\n\nHello! How can I help you today?",
        "Okay, 2 + 2 is 4.\n</think>\n\nThe answer is **4**.",
        "<think>\n\n</think>\n\nJust the answer.",
        "<think>Never closes, the budget ran out in the middle of a thou",
        "  \n<think>space before the tag</think>answer right after",
        "No tags at all, a plain answer.\n",
        "The answer mentions <think> later, which is not a thought.",
        "<thinking> is not the tag</think> and so is all answer",
        "<think>nested <think> stays in the thoughts</think> then </think> stays in the answer",
        "<think>a < b and c </ d </thin k> is not the end</think>\t \r\nend",
        "<think>ünïcödé 思考 🤔\u{301}</think>\n答え 😀",
        "<thi",
        "<think>",
        "</think>",
        "   ",
        "",
        "<think>   </think>   ",
        "<think>trailing partial </thi",
        "\r\n<think>\r\nCRLF thoughts\r\n</think>\r\n\r\nCRLF answer\r\n",
    ]

    /// What the thoughts and the answer of `text` are, found on the whole text at once.
    static func reference(_ text: String, startsInThoughts: Bool) -> (reasoning: String, answer: String) {
        let scalars = Array(text.unicodeScalars)
        let spaces: Set<Unicode.Scalar> = [" ", "\n", "\r", "\t"]
        func string(_ part: ArraySlice<Unicode.Scalar>) -> String {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: part)
            return String(view)
        }
        func dropLeading(_ part: ArraySlice<Unicode.Scalar>) -> ArraySlice<Unicode.Scalar> { part.drop { spaces.contains($0) } }
        func trim(_ part: ArraySlice<Unicode.Scalar>) -> ArraySlice<Unicode.Scalar> {
            var end = part.endIndex
            while end > part.startIndex, spaces.contains(part[end - 1]) { end -= 1 }
            return dropLeading(part[..<end])
        }
        func find(_ tag: String, in part: ArraySlice<Unicode.Scalar>) -> Range<Int>? {
            let tag = Array(tag.unicodeScalars)
            guard part.count >= tag.count else { return nil }
            for start in part.startIndex...(part.endIndex - tag.count) where part[start..<start + tag.count].elementsEqual(tag) {
                return start..<start + tag.count
            }
            return nil
        }
        let open = Array("<think>".unicodeScalars)
        var body = dropLeading(scalars[...])
        if body.starts(with: open) {
            body = body.dropFirst(open.count)
        } else if !startsInThoughts {
            return ("", text)
        }
        guard let close = find("</think>", in: body) else { return (string(trim(body)), "") }
        return (string(trim(body[..<close.lowerBound])), string(dropLeading(body[close.upperBound...])))
    }

    /// Streams `pieces` through a splitter and gathers what it gives out.
    static func stream(_ pieces: [String], startsInThoughts: Bool) -> (reasoning: String, answer: String) {
        var splitter = ReasoningSplitter(startsInThoughts: startsInThoughts)
        var reasoning = "", answer = ""
        for piece in pieces {
            let part = splitter.append(piece)
            reasoning += part.reasoning
            answer += part.answer
        }
        let last = splitter.finish()
        return (reasoning + last.reasoning, answer + last.answer)
    }

    /// `text` cut at the given scalar offsets.
    static func pieces(_ text: String, cuts: [Int]) -> [String] {
        let scalars = Array(text.unicodeScalars)
        var result: [String] = []
        var start = 0
        for cut in cuts.sorted() + [scalars.count] {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars[start..<cut])
            result.append(String(view))
            start = cut
        }
        return result
    }

    @Test(arguments: [false, true])
    func everyCutAtOneOrTwoPlacesGivesTheWholeTextsSplit(startsInThoughts: Bool) {
        for text in Self.outputs {
            let expected = Self.reference(text, startsInThoughts: startsInThoughts)
            let count = text.unicodeScalars.count
            for first in 0...count {
                let one = Self.stream(Self.pieces(text, cuts: [first]), startsInThoughts: startsInThoughts)
                #expect(one == expected, "\(text.debugDescription) cut at \(first)")
                for second in first...count where count <= 40 {
                    let two = Self.stream(Self.pieces(text, cuts: [first, second]), startsInThoughts: startsInThoughts)
                    #expect(two == expected, "\(text.debugDescription) cut at \(first), \(second)")
                }
            }
            let scalars = text.unicodeScalars.map { String($0) }
            #expect(Self.stream(scalars, startsInThoughts: startsInThoughts) == expected, "\(text.debugDescription) by scalars")
        }
    }

    /// Random outputs built from tag fragments, whitespace and text, cut at random places.
    @Test(arguments: [false, true])
    func randomOutputsCutAtRandom(startsInThoughts: Bool) {
        let fragments = ["<think>", "</think>", "<", "</", "think", ">", "<thi", "nk>", "</th", "ink>", " ", "\n", "\r\n", "\t",
                         "a", "Hmm", "é", "🤔", "答", "\u{301}"]
        var seeded = SplitMix64(seed: 0x5EED)
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...12, using: &seeded)).map { _ in fragments.randomElement(using: &seeded)! }.joined()
            let count = text.unicodeScalars.count
            let cuts = (0..<Int.random(in: 0...6, using: &seeded)).map { _ in Int.random(in: 0...count, using: &seeded) }
            let expected = Self.reference(text, startsInThoughts: startsInThoughts)
            #expect(Self.stream(Self.pieces(text, cuts: cuts), startsInThoughts: startsInThoughts) == expected,
                    "\(text.debugDescription) cut at \(cuts.sorted())")
        }
    }

    /// The outputs token by token as Qwen2's tokenizer writes them (`<think>` is `<`, `think`,
    /// `>` there), decoded the way generation decodes them.
    @Test(arguments: [false, true])
    func tokenByTokenWithARealTokenizer(startsInThoughts: Bool) throws {
        let tokenizer = try TokenizerLoader.load(from: GGUFFile(contentsOf: TestFiles.modelURL("llama-cpp-vocab/ggml-vocab-qwen2.gguf")))
        for text in Self.outputs {
            var decoder = StreamingTextDecoder()
            let tokens = tokenizer.encode(text, addSpecial: false, parseSpecial: false)
            let pieces = tokens.map { decoder.append(tokenizer.tokenBytes($0)) } + [decoder.flush()]
            #expect(pieces.joined() == text)
            #expect(Self.stream(pieces, startsInThoughts: startsInThoughts) == Self.reference(text, startsInThoughts: startsInThoughts),
                    "\(text.debugDescription)")
        }
    }

    @Test func theSplitOfKnownShapes() {
        #expect(ReasoningSplitter.split("<think>\nA.\n</think>\n\nB", startsInThoughts: false) == ("A.", "B"))
        #expect(ReasoningSplitter.split("A.\n</think>\n\nB", startsInThoughts: true) == ("A.", "B"))
        #expect(ReasoningSplitter.split(" B <think>", startsInThoughts: false) == ("", " B <think>"))
        #expect(ReasoningSplitter.split("unfinished", startsInThoughts: true) == ("unfinished", ""))
    }

    /// A harmony output cut off by the end inside a header (the token limit reached) leaves no
    /// piece of markup in the answer, however it was streamed.
    @Test func harmonyHeadersCutOffByTheEnd() {
        let thoughts = "<|channel|>analysis<|message|>Plan.<|end|>"
        for header in ["<|start|>assistant<|channel|>final<|message|>", "<|channel|>analysis<|message|>"] {
            for length in 2..<header.utf8.count {
                let cut = String(decoding: header.utf8.prefix(length), as: UTF8.self)
                for output in [thoughts + cut, cut] {
                    let whole = ReasoningSplitter.split(output, startsInThoughts: false, markers: .harmony)
                    #expect(whole.answer.isEmpty, "\(output)")
                    #expect(whole.reasoning == (output == cut ? "" : "Plan."), "\(output)")
                    var splitter = ReasoningSplitter(startsInThoughts: false, markers: .harmony)
                    var answer = ""
                    for character in output { answer += splitter.append(String(character)).answer }
                    answer += splitter.finish().answer
                    #expect(answer.isEmpty, "\(output), a character at a time")
                }
            }
        }
        let finished = ReasoningSplitter.split(thoughts + "<|start|>assistant<|channel|>final<|message|>Yes", startsInThoughts: false,
                                               markers: .harmony)
        #expect(finished.reasoning == "Plan." && finished.answer == "Yes")
    }

    /// Gemma 4's thought channel, whole or a character at a time; output without it is all answer.
    @Test func gemma4ThoughtChannel() throws {
        let cases: [(String, String, String)] = [
            ("<|channel>thought\nThe user asks for the time.\n<channel|>It is noon.", "The user asks for the time.", "It is noon."),
            ("<|channel>thought\n<channel|>Just the answer.", "", "Just the answer."),
            ("No channel at all.", "", "No channel at all."),
            ("<|channel>thought\nNever closes", "Never closes", ""),
            ("<|channel>thought\nPlan.<channel|><|tool_call>call:f{}<tool_call|>", "Plan.", "<|tool_call>call:f{}<tool_call|>"),
        ]
        for (output, reasoning, answer) in cases {
            #expect(ReasoningSplitter.split(output, startsInThoughts: false, markers: .gemma4) == (reasoning, answer), "\(output)")
            var splitter = ReasoningSplitter(startsInThoughts: false, markers: .gemma4)
            var streamed = (reasoning: "", answer: "")
            for character in output {
                let part = splitter.append(String(character))
                streamed.reasoning += part.reasoning
                streamed.answer += part.answer
            }
            let last = splitter.finish()
            #expect((streamed.reasoning + last.reasoning, streamed.answer + last.answer) == (reasoning, answer), "\(output), a character at a time")
        }
    }

    @Test func aPromptThatOpensTheThoughts() {
        #expect(ChatFormat.opensThoughts("<|im_start|>assistant\n<think>\n"))
        #expect(ChatFormat.opensThoughts("<｜Assistant｜><think>\n"))
        #expect(!ChatFormat.opensThoughts("<｜Assistant｜><think>\n</think>"))
        #expect(!ChatFormat.opensThoughts("<|im_start|>assistant\n<think>\n\n</think>\n\n"))
        #expect(!ChatFormat.opensThoughts("<|im_start|>assistant\n"))
    }
}


/// Which chat formats are reasoning models', from the template or the vocabulary.
@Suite struct ThinkingDetectionTests {
    /// A chat format read from a GGUF that holds only tokenizer metadata.
    static func format(template: String, tokens: [String]) throws -> ChatFormat {
        var writer = GGUFWriter()
        writer.add("general.architecture", .string("llama"))
        writer.add("tokenizer.ggml.tokens", strings: tokens)
        writer.add("tokenizer.chat_template", .string(template))
        return try ChatFormat(gguf: GGUFFile(bytes: try writer.data()))
    }

    static let plainTemplate = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"

    @Test func theVocabularyOrTheTemplateMakesAModelThink() throws {
        #expect(try Self.format(template: Self.plainTemplate, tokens: ["a", "<think>", "</think>"]).thinks)
        #expect(try !Self.format(template: Self.plainTemplate, tokens: ["a", "<think>", "think"]).thinks)
        #expect(try !Self.format(template: Self.plainTemplate, tokens: ["a", "b"]).thinks)
        #expect(try Self.format(template: "{% if enable_thinking %}x{% endif %}" + Self.plainTemplate, tokens: ["a"]).thinks)
    }

    @Test(arguments: [("Qwen-Qwen3-0.6B", true), ("Qwen-QwQ-32B", true), ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", true),
                      ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B", true), ("Qwen-Qwen2.5-7B-Instruct", false),
                      ("meta-llama-Llama-3.1-8B-Instruct", false), ("google-gemma-2-2b-it", false), ("google-gemma-4-31B-it", true)])
    func realTemplates(name: String, thinks: Bool) throws {
        let source = try String(contentsOf: TestFiles.modelURL("templates/\(name).jinja"), encoding: .utf8)
        let format = try Self.format(template: source, tokens: ["a"])
        #expect(format.thinks == thinks)
        // Gemma 4 thinks in its own channel, which it may open (empty) with thinking off too.
        if name.contains("gemma-4") {
            #expect(format.reasoningMarkers == .gemma4)
            var off = GenerationOptions()
            off.thinking = false
            #expect(format.reasoningSplitter(prompt: try format.render([ChatMessage(role: .user, content: "Hi")]), options: off) != nil)
        }
        let messages = [ChatMessage(role: .user, content: "Hi")]
        // QwQ and the R1 distills open the thoughts in the generation prompt; with thinking off,
        // those that read enable_thinking close them again.
        let opens = try ChatFormat.opensThoughts(format.render(messages))
        #expect(opens == (name.contains("QwQ") || name.contains("R1")))
        let closed = try !ChatFormat.opensThoughts(format.render(messages, enableThinking: false))
        #expect(closed == (!opens || source.contains("enable_thinking")))
    }
}
