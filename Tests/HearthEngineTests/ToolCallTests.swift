import Foundation
import Hearth
import HearthTemplates
import HearthTestSupport
import Testing

private let toolModel = Result { try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2) }

/// Two tools with object schemas, as an app would declare them.
let weatherTools = [
    ToolDefinition(name: "get_weather", description: "The current weather in a city",
                   parameters: try! JSONValue(parsing: #"{"type": "object", "properties": {"city": {"type": "string", "maxLength": 40}, "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}"#)),
    ToolDefinition(name: "get_time", description: "The local time in a city",
                   parameters: try! JSONValue(parsing: #"{"type": "object", "properties": {"city": {"type": "string", "maxLength": 40}}, "required": ["city"]}"#)),
]

/// Feeds `text` to the grammar from the start.
func grammarAccepts(_ grammar: Grammar, _ text: String) -> Bool {
    let compiled = CompiledGrammar(grammar)
    var state = compiled.start()
    return state.consume(Array(text.utf8), in: compiled) && state.isAccepting
}

@Suite struct ToolCallFormatTests {
    /// Each family's template tells its format, as llama.cpp detects it.
    @Test func formatsFromTemplates() throws {
        let expected: [(String, ToolCallFormat)] = [
            ("Qwen-Qwen2.5-7B-Instruct", .hermes), ("Qwen-Qwen3-0.6B", .hermes),
            ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", .hermes), ("meta-llama-Llama-3.2-3B-Instruct", .llama3),
            ("meta-llama-Llama-3.1-8B-Instruct", .llama3), ("mistralai-Mistral-Nemo-Instruct-2407", .mistral),
            ("google-gemma-2-2b-it", .generic), ("Qwen3.5-4B", .xmlParameters), ("Qwen3-Coder", .xmlParameters),
            ("openai-gpt-oss-120b", .harmony), ("google-gemma-4-31B-it", .gemma4), ("google-gemma-4-31B-it-interleaved", .gemma4),
        ]
        for (name, format) in expected {
            let source = try String(contentsOf: TestFiles.modelURL("templates/\(name).jinja"), encoding: .utf8)
            #expect(ToolCallFormat.detect(template: source) == format, "\(name)")
        }
        let smol = try toolModel.get()
        #expect(try ChatFormat(gguf: smol.gguf).toolCallFormat == .generic)
    }

    /// Each format's grammar takes its calls and refuses others, and `parse` reads them back.
    @Test func grammarsAndParsing() throws {
        let good: [(ToolCallFormat, String, [String])] = [
            (.hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>", ["get_weather", "get_time"]),
            (.llama3, "{\"name\": \"get_time\", \"parameters\": {\"city\": \"Lima\"}}", ["get_time"]),
            (.mistral, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"city\": \"Rome\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"unit\": \"fahrenheit\"}}]", ["get_time", "get_weather"]),
            (.generic, "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Nice\", \"unit\": \"celsius\"}}]}", ["get_weather"]),
        ]
        for (format, text, names) in good {
            let (grammar, triggers) = try format.grammar(tools: weatherTools, choice: .required, parallel: true)
            #expect(triggers.isEmpty)
            #expect(grammarAccepts(grammar, text), "\(format)")
            let parsed = format.parse(text)
            #expect(parsed.calls.map(\.name) == names, "\(format)")
            #expect(parsed.content.isEmpty)
            #expect(parsed.calls.first?.arguments["city"] != nil)
        }
        // Unknown tools, missing required arguments and two calls without parallel calls are refused.
        let hermes = try ToolCallFormat.hermes.grammar(tools: weatherTools, choice: .required, parallel: false).0
        #expect(!grammarAccepts(hermes, "<tool_call>{\"name\": \"delete_all\", \"arguments\": {}}</tool_call>"))
        #expect(!grammarAccepts(hermes, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>"))
        #expect(!grammarAccepts(hermes, "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"A\"}}</tool_call><tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"B\"}}</tool_call>"))
        // A named tool: only it.
        let named = try ToolCallFormat.generic.grammar(tools: weatherTools, choice: .tool("get_time"), parallel: true).0
        #expect(!grammarAccepts(named, "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Nice\", \"unit\": \"celsius\"}}]}"))
        #expect(grammarAccepts(named, "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {\"city\": \"Nice\"}}]}"))
        // Auto: the generic answer may be a response; native formats wait for their trigger.
        let auto = try ToolCallFormat.generic.grammar(tools: weatherTools, choice: .auto, parallel: true).0
        #expect(grammarAccepts(auto, "{\"response\": \"It is sunny.\"}"))
        #expect(ToolCallFormat.generic.parse("{\"response\": \"It is \\\"sunny\\\".\"}").content == "It is \"sunny\".")
        #expect(try ToolCallFormat.hermes.grammar(tools: weatherTools, choice: .auto, parallel: true).1 == ["<tool_call>"])
        // Text around calls stays text; a broken call stays text.
        let mixed = ToolCallFormat.hermes.parse("Let me look.\n<tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>")
        #expect(mixed.content == "Let me look." && mixed.calls.count == 1)
        let broken = ToolCallFormat.hermes.parse("<tool_call>{\"name\": \"get_time\", \"argu")
        #expect(broken.calls.isEmpty && broken.content.contains("<tool_call>"))
        #expect(throws: HearthError.self) { try ToolCallFormat.hermes.grammar(tools: weatherTools, choice: .tool("nope"), parallel: true) }
    }

    /// Qwen3.5's and Qwen3-Coder's XML calls: the grammar holds each parameter to its schema
    /// (a string's lengths, an enum, JSON for the rest) and `parse` reads values by their schema.
    @Test func xmlParameters() throws {
        let format = ToolCallFormat.xmlParameters
        let call = { (name: String, parameters: [(String, String)]) in
            "<tool_call>\n<function=\(name)>\n" + parameters.map { "<parameter=\($0.0)>\n\($0.1)\n</parameter>\n" }.joined()
                + "</function>\n</tool_call>"
        }
        let two = call("get_weather", [("city", "Paris"), ("unit", "celsius")]) + "\n" + call("get_time", [("city", "Oslo")])
        let (grammar, triggers) = try format.grammar(tools: weatherTools, choice: .required, parallel: true)
        #expect(triggers.isEmpty)
        #expect(grammarAccepts(grammar, two))
        let parsed = format.parse(two, tools: weatherTools)
        #expect(parsed.calls.map(\.name) == ["get_weather", "get_time"])
        #expect(parsed.calls[0].arguments == .object([("city", .string("Paris")), ("unit", .string("celsius"))]))
        #expect(parsed.content.isEmpty)
        // Refused: an unknown tool, a value outside the enum, a missing required parameter, a
        // city longer than 40 characters, two calls without parallel calls.
        #expect(!grammarAccepts(grammar, call("delete_all", [])))
        #expect(!grammarAccepts(grammar, call("get_weather", [("city", "Paris"), ("unit", "kelvin")])))
        #expect(!grammarAccepts(grammar, call("get_weather", [("city", "Paris")])))
        #expect(!grammarAccepts(grammar, call("get_time", [("city", String(repeating: "a", count: 41))])))
        let single = try format.grammar(tools: weatherTools, choice: .required, parallel: false).0
        #expect(!grammarAccepts(single, two))
        #expect(try format.grammar(tools: weatherTools, choice: .auto, parallel: true).1 == ["<tool_call>"])

        // Values by schema: a string stays a string even when it reads as a number; an integer,
        // a boolean (JSON's or Python's) and an object are values.
        let counter = ToolDefinition(name: "count", description: "",
                                     parameters: try JSONValue(parsing: #"{"type": "object", "properties": {"label": {"type": "string"}, "n": {"type": "integer"}, "loud": {"type": "boolean"}, "options": {"type": "object"}}, "required": ["label", "n"]}"#))
        let text = "Counting.\n" + call("count", [("label", "42"), ("n", "3"), ("loud", "True"), ("options", #"{"a": [1, 2]}"#)])
        let counted = format.parse(text, tools: [counter])
        #expect(counted.content == "Counting.")
        #expect(counted.calls.first?.arguments == .object([("label", .string("42")), ("n", .number(3)), ("loud", .bool(true)),
                                                          ("options", .object([("a", .array([.number(1), .number(2)]))]))]))
        let counterGrammar = try format.grammar(tools: [counter], choice: .required, parallel: false).0
        #expect(grammarAccepts(counterGrammar, call("count", [("label", "a <b> c"), ("n", "3")])))
        #expect(!grammarAccepts(counterGrammar, call("count", [("label", "x"), ("n", "three")])))
        // A broken call stays text.
        let broken = format.parse("<tool_call>\n<function=get_time>\n<parameter=city>\nOs", tools: weatherTools)
        #expect(broken.calls.isEmpty && broken.content.contains("<tool_call>"))
    }

    /// Gemma 4's calls: the grammar holds each parameter to its schema in Gemma's notation
    /// (strings between `<|"|>` marks, the rest as JSON), `parse` reads that notation (nested
    /// objects and arrays, bare keys) and the text around the blocks, and calls its template wrote
    /// read back to the arguments it was given.
    @Test func gemma4() throws {
        let format = ToolCallFormat.gemma4
        let q = "<|\"|>"
        let two = "<|tool_call>call:get_weather{city:\(q)Paris\(q),unit:\(q)celsius\(q)}<tool_call|>"
            + "<|tool_call>call:get_time{city:\(q)Oslo, Norway\(q)}<tool_call|>"
        let (grammar, triggers) = try format.grammar(tools: weatherTools, choice: .required, parallel: true)
        #expect(triggers.isEmpty)
        #expect(grammarAccepts(grammar, two))
        let parsed = format.parse("Let me check.\n" + two + "\n")
        #expect(parsed.calls.map { $0.name } == ["get_weather", "get_time"])
        #expect(parsed.calls[0].arguments == .object([("city", .string("Paris")), ("unit", .string("celsius"))]))
        #expect(parsed.calls[1].arguments == .object([("city", .string("Oslo, Norway"))]))
        #expect(parsed.content == "Let me check.")
        // Refused: an unknown tool, a value outside the enum, a missing required parameter, a
        // city longer than 40 characters, a JSON string where Gemma writes its marks, two calls
        // without parallel calls.
        #expect(!grammarAccepts(grammar, "<|tool_call>call:delete_all{}<tool_call|>"))
        #expect(!grammarAccepts(grammar, "<|tool_call>call:get_weather{city:\(q)Paris\(q),unit:\(q)kelvin\(q)}<tool_call|>"))
        #expect(!grammarAccepts(grammar, "<|tool_call>call:get_weather{city:\(q)Paris\(q)}<tool_call|>"))
        #expect(!grammarAccepts(grammar, "<|tool_call>call:get_time{city:\(q)\(String(repeating: "a", count: 41))\(q)}<tool_call|>"))
        #expect(!grammarAccepts(grammar, "<|tool_call>call:get_time{city:\"Oslo\"}<tool_call|>"))
        #expect(!grammarAccepts(try format.grammar(tools: weatherTools, choice: .required, parallel: false).0, two))
        #expect(try format.grammar(tools: weatherTools, choice: .auto, parallel: true).1 == ["<|tool_call>"])

        // Optional parameters may be left out anywhere, commas only between those written.
        let counter = ToolDefinition(name: "count", description: "",
                                     parameters: try JSONValue(parsing: #"{"type": "object", "properties": {"label": {"type": "string"}, "n": {"type": "integer"}, "loud": {"type": "boolean"}, "options": {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}}, "required": ["n"]}"#))
        let counterGrammar = try format.grammar(tools: [counter], choice: .required, parallel: false).0
        for arguments in ["n:3", "label:\(q)x\(q),n:3", "n:3,loud:true", "label:\(q)a <b> c\(q),n:-2,loud:false,options:{\"a\":[1,2]}"] {
            #expect(grammarAccepts(counterGrammar, "<|tool_call>call:count{\(arguments)}<tool_call|>"), "\(arguments)")
        }
        for arguments in ["", ",n:3", "n:3,", "label:\(q)x\(q)", "n:three", "label:\(q)x\(q)n:3"] {
            #expect(!grammarAccepts(counterGrammar, "<|tool_call>call:count{\(arguments)}<tool_call|>"), "\(arguments)")
        }
        // Gemma's own notation for nested values, as its template writes them.
        let nested = format.parse("<|tool_call>call:count{label:\(q)a, {b}\(q),n:3,loud:true,options:{a:[1,2],b:{c:\(q)d\(q),e:null}}}<tool_call|>")
        let expected: JSONValue = .object([
            ("label", .string("a, {b}")), ("n", .number(3)), ("loud", .bool(true)),
            ("options", .object([("a", .array([.number(1), .number(2)])), ("b", .object([("c", .string("d")), ("e", .null)]))])),
        ])
        #expect(nested.calls.first?.arguments == expected)
        // A string that begins with a combining mark (which joins the mark's `>` in one character).
        let combining = format.parse("<|tool_call>call:get_time{city:\(q)\u{0CCD}ರೀ\(q)}<tool_call|>")
        #expect(combining.calls.first?.arguments == .object([("city", .string("\u{0CCD}ರೀ"))]))
        // A broken call stays text, with all after it.
        for broken in ["<|tool_call>call:get_time{city:\(q)Os", "<|tool_call>call:get_time{city}<tool_call|>", "<|tool_call>get_time{}<tool_call|>"] {
            let read = format.parse(broken)
            #expect(read.calls.isEmpty && read.content == broken, "\(broken)")
        }

        // The template's own rendering of a call reads back to its arguments.
        let source = try String(contentsOf: TestFiles.modelURL("templates/google-gemma-4-31B-it.jinja"), encoding: .utf8)
        let template = try ChatTemplate(source: source)
        let arguments: JSONValue = .object([("city", .string("Rio, \"RJ\"")), ("n", .number(2)), ("tags", .array([.string("a"), .bool(false)])),
                                             ("where", .object([("label", .string("x:y")), ("lat", .number(-22.5))]))])
        let messages = try TemplateValue(json: #"[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "# + arguments.jsonText + "}}]}]")
        let rendered = try template.render(["messages": messages, "bos_token": .string("<bos>"), "add_generation_prompt": .bool(false)])
        let start = try #require(rendered.range(of: "<|tool_call>"))
        let end = try #require(rendered.range(of: "<tool_call|>"))
        let read = format.parse(String(rendered[start.lowerBound..<end.upperBound]))
        #expect(read.calls.first?.name == "get_weather")
        #expect(read.calls.first?.arguments == arguments, "\(rendered)")
    }

    /// gpt-oss's harmony calls: the grammar writes them as its template does (after an analysis
    /// message when the call is required), `parse` reads both of the model's ways of addressing
    /// the function, and the reasoning splitter and the separation together leave the thoughts,
    /// no text and the call, however the output is cut.
    @Test func harmony() throws {
        let format = ToolCallFormat.harmony
        let call = #" to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris", "unit": "celsius"}"#
        let (required, triggers) = try format.grammar(tools: weatherTools, choice: .required, parallel: true)
        #expect(triggers.isEmpty)
        #expect(grammarAccepts(required, call))
        #expect(grammarAccepts(required, "<|channel|>analysis<|message|>The user wants the weather.<|end|><|start|>assistant" + call))
        #expect(!grammarAccepts(required, #" to=functions.delete_all<|channel|>commentary json<|message|>{}"#))
        #expect(!grammarAccepts(required, #" to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}"#))
        #expect(!grammarAccepts(required, "<|channel|>analysis<|message|>" + String(repeating: "a", count: 601) + "<|end|>" + call))
        let (auto, autoTriggers) = try format.grammar(tools: weatherTools, choice: .auto, parallel: true)
        #expect(autoTriggers.contains(" to=functions.") && grammarAccepts(auto, "<|start|>assistant" + call))
        #expect(!grammarAccepts(auto, "<|channel|>analysis<|message|>x<|end|>" + call))
        let inChannel = #"<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"city": "Oslo"}"#
        #expect(autoTriggers.contains("<|channel|>commentary to=") && grammarAccepts(auto, inChannel))
        #expect(grammarAccepts(required, "<|channel|>analysis<|message|>Oslo.<|end|><|start|>assistant" + inChannel))
        // After thoughts, the call is a message of its own.
        #expect(!grammarAccepts(required, "<|channel|>analysis<|message|>Oslo.<|end|>" + call))

        for text in ["<|start|>assistant" + call + "<|call|>",
                     #"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris","unit":"celsius"}"#] {
            let parsed = format.parse(text, tools: weatherTools)
            #expect(parsed.calls.map(\.name) == ["get_weather"], "\(text)")
            #expect(parsed.calls.first?.arguments == .object([("city", .string("Paris")), ("unit", .string("celsius"))]))
            #expect(parsed.content.isEmpty)
        }
        let broken = format.parse(" to=functions.get_time<|channel|>commentary json<|message|>{\"city\": \"Os", tools: weatherTools)
        #expect(broken.calls.isEmpty && broken.content.contains("to=functions."))

        // Streamed: analysis, then the call; or analysis, then the final answer.
        let pieces = ["<|channel|>analy", "sis<|message|>Weather in Paris.<|e", "nd|><|start|>assis", "tant to=functions.get_",
                      #"weather<|channel|>commentary json<|message|>{"city": "Paris", "#, #""unit": "celsius"}"#, ""]
        var output = ChatOutput(splitter: ReasoningSplitter(startsInThoughts: false, markers: .harmony),
                                toolCalls: ToolCallSeparation(format: format, tools: weatherTools))
        var reasoning = "", text = "", calls: [ToolCall] = []
        for (i, piece) in pieces.enumerated() {
            let chunk = output.process(GenerationChunk(text: piece, finishReason: i == pieces.count - 1 ? .stop : nil))
            reasoning += chunk.reasoning
            text += chunk.text
            calls += chunk.toolCalls ?? []
        }
        #expect(reasoning == "Weather in Paris." && text.isEmpty && calls.map(\.name) == ["get_weather"])
        let answer = ReasoningSplitter.split("<|channel|>analysis<|message|>Greet.<|end|><|start|>assistant<|channel|>final<|message|>Hello!",
                                             startsInThoughts: false, markers: .harmony)
        #expect(answer.reasoning == "Greet." && answer.answer == "Hello!")
        let direct = ReasoningSplitter.split("<|channel|>final<|message|>Hi.", startsInThoughts: false, markers: .harmony)
        #expect(direct.reasoning.isEmpty && direct.answer == "Hi.")
        let twice = ReasoningSplitter.split("<|channel|>analysis<|message|>One.<|end|><|start|>assistant<|channel|>analysis<|message|>Two.<|end|>"
                                            + "<|start|>assistant<|channel|>final<|message|>Done.", startsInThoughts: false, markers: .harmony)
        #expect(twice.reasoning == "One.\nTwo." && twice.answer == "Done.")
        // The recipient after the channel, cut anywhere: no header reaches the text.
        let channelForm = "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant" + inChannel
        for cut in stride(from: 1, to: channelForm.utf8.count, by: 7) {
            let bytes = Array(channelForm.utf8)
            var output = ChatOutput(splitter: ReasoningSplitter(startsInThoughts: false, markers: .harmony),
                                    toolCalls: ToolCallSeparation(format: format, tools: weatherTools))
            let first = output.process(GenerationChunk(text: String(decoding: bytes[..<cut], as: UTF8.self)))
            let last = output.process(GenerationChunk(text: String(decoding: bytes[cut...], as: UTF8.self), finishReason: .stop))
            #expect(first.text + last.text == "" && first.reasoning + last.reasoning == "Hmm.", "cut at \(cut)")
            #expect(last.toolCalls?.map(\.name) == ["get_time"], "cut at \(cut)")
        }
    }

    /// The separation streams the text before a call, holds back what may be a trigger, keeps
    /// the call out of the text and puts it on the last chunk, however the output is cut.
    @Test func separationAcrossChunks() {
        func run(_ format: ToolCallFormat, _ pieces: [String]) -> (text: String, calls: [ToolCall], streamedBeforeEnd: String) {
            var separation = ToolCallSeparation(format: format)
            var text = "", calls: [ToolCall] = []
            for (i, piece) in pieces.enumerated() {
                let last = i == pieces.count - 1
                let chunk = separation.separate(GenerationChunk(text: piece, finishReason: last ? .stop : nil))
                text += chunk.text
                calls += chunk.toolCalls ?? []
            }
            var streamed = ""
            var again = ToolCallSeparation(format: format)
            for piece in pieces.dropLast() { streamed += again.separate(GenerationChunk(text: piece)).text }
            return (text, calls, streamed)
        }
        let hermes = run(.hermes, ["Sure", ", checking. <tool", "_call>{\"name\": \"get_time\", ", "\"arguments\": {\"city\": \"Oslo\"}}</tool_call>", ""])
        #expect(hermes.text == "Sure, checking. ")
        #expect(hermes.calls.map(\.name) == ["get_time"])
        #expect(hermes.streamedBeforeEnd == "Sure, checking. ")
        // Text that only looked like the start of a trigger comes out.
        let notACall = run(.hermes, ["a <to", "ol> b", ""])
        #expect(notACall.text == "a <tool> b" && notACall.calls.isEmpty)
        #expect(notACall.streamedBeforeEnd == "a <tool> b")
        // The generic format streams the response string as it is decoded.
        let generic = run(.generic, ["{\"resp", "onse\": \"Hé", "llo \\\"wo", "rld\\\" \\u00", "e9!\"}", ""])
        #expect(generic.text == "Héllo \"world\" é!")
        #expect(generic.streamedBeforeEnd == "Héllo \"world\" é!")
        let genericCall = run(.generic, ["{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {\"city\": \"Oslo\"}}]}", ""])
        #expect(genericCall.text.isEmpty && genericCall.calls.count == 1)
    }
}

@Suite(.serialized) struct ToolCallGenerationTests {
    /// SmolLM2 asked with tool_choice required at temperature 1.0: every answer is calls of the
    /// offered tools whose arguments have the schema's required keys and enum values.
    @Test func requiredCallsAreValidAtTemperatureOne() throws {
        let model = try toolModel.get()
        let format = try ChatFormat(gguf: model.gguf)
        var calls = 0
        for seed in 1...12 {
            var options = wideSampling(seed: UInt64(seed), maxTokens: 400)
            let prompt = model.tokenizer.encode(
                try format.render([ChatMessage(role: .user, content: "What's the weather and the time in Paris?")], tools: weatherTools,
                                  toolChoice: .required),
                addSpecial: true, parseSpecial: true)
            let (grammar, triggers) = try format.toolCallFormat.grammar(tools: weatherTools, choice: .required, parallel: seed % 2 == 0)
            options.grammar = grammar
            options.grammarTriggers = triggers
            let state = try model.makeSequence(contextLength: 1024)
            var text = "", finish: FinishReason?
            try model.generate(prompt: prompt, options: options, sequence: state) { chunk in
                text += chunk.text
                finish = chunk.finishReason ?? finish
                return true
            }
            #expect(finish == .stop, "seed \(seed): \(text)")
            let parsed = format.toolCallFormat.parse(text)
            #expect(!parsed.calls.isEmpty, "seed \(seed): \(text)")
            for call in parsed.calls {
                calls += 1
                #expect(["get_weather", "get_time"].contains(call.name))
                #expect(call.arguments["city"]?.stringValue != nil, "\(call)")
                if call.name == "get_weather" {
                    #expect(["celsius", "fahrenheit"].contains(call.arguments["unit"]?.stringValue ?? ""), "\(call)")
                }
            }
        }
        #expect(calls >= 12)
    }
}
