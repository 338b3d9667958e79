import Foundation
import HearthCore
import HearthTemplates
import HearthTestSupport
import Testing

/// Values going in: JSON as Python reads it, Swift literals, and the conversation helper.
@Suite struct ValueTests {
    @Test func jsonKeepsKeyOrderAndNumberKinds() throws {
        let value = try TemplateValue(json: #"{"z": 1, "a": 1.0, "m": [true, null, "é\u00e9\ud83e\udd16\n"], "e": 1e3}"#)
        guard case .object(let object) = value else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == ["z", "a", "m", "e"])
        #expect(object["z"] == .int(1))
        #expect(object["a"] == .double(1))
        #expect(object["e"] == .double(1000))
        #expect(object["m"] == [true, nil, "éé🤖\n"])
        let template = try ChatTemplate(source: "{{ v|tojson }} {{ v.a }} {{ v.z }}")
        #expect(try template.render(["v": value]) == #"{"z": 1, "a": 1.0, "m": [true, null, "éé🤖\n"], "e": 1000.0} 1.0 1"#)
    }

    @Test func malformedJSONIsAnInputError() {
        for text in ["{", "[1,]", "{\"a\" 1}", "nul", "\"\\x\"", "1 2"] {
            #expect(throws: HearthError.self) { try TemplateValue(json: text) }
        }
    }

    @Test func objectLiteralsKeepTheirOrder() throws {
        let tool: TemplateValue = ["name": "get", "description": "Gets.", "parameters": ["type": "object"]]
        let template = try ChatTemplate(source: "{{ t|tojson }}")
        #expect(try template.render(["t": tool]) == #"{"name": "get", "description": "Gets.", "parameters": {"type": "object"}}"#)
        var object = TemplateObject()
        object["b"] = 1
        object["a"] = 2
        object["b"] = 3
        #expect(object.keys == ["b", "a"])
        object["b"] = nil
        #expect(object.keys == ["a"])
    }

    @Test func conversationHelperMatchesTheFixture() throws {
        let directory = Fixtures.directory
        let source = try String(contentsOf: directory.appendingPathComponent("smollm2.jinja"), encoding: .utf8)
        let expected = try String(contentsOf: directory.appendingPathComponent("expected/smollm2/system-single-turn.txt"), encoding: .utf8)
        let prompt = try ChatTemplate(source: source).render(
            messages: [["role": "system", "content": "You are a concise assistant."],
                       ["role": "user", "content": "What is the capital of France?"]],
            addGenerationPrompt: true, bosToken: "<|im_start|>", eosToken: "<|im_end|>")
        #expect(prompt == expected)
    }

    @Test func conversationHelperPassesLlamaServerVariables() throws {
        let template = try ChatTemplate(source: """
            {{- tools is defined }} {{ documents is defined }} {{ add_generation_prompt }} {{ bos_token }}{{ eos_token }} \
            {{- ' ' ~ enable_thinking }} {{ date_string }} / {{ datetime }}
            {%- if tools %} {{ tools|map(attribute='function.name')|join(',') }}{% endif %}
            """)
        var options = TemplateRenderOptions()
        options.now = Date(timeIntervalSince1970: 1_700_000_000)
        options.timeZone = TimeZone(identifier: "UTC")!
        #expect(try template.render(messages: [], addGenerationPrompt: false, bosToken: "<s>", eosToken: "</s>", options: options)
            == "False False False <s></s> True 14 Nov 2023 / Nov 14 2023")
        #expect(try template.render(messages: [], addGenerationPrompt: false, bosToken: "", eosToken: "", tools: [],
                                    extra: ["enable_thinking": false], options: options)
            == "False False False  False 14 Nov 2023 / Nov 14 2023")
        let tools: [TemplateValue] = [["type": "function", "function": ["name": "a"]], ["type": "function", "function": ["name": "b"]]]
        #expect(try template.render(messages: [], addGenerationPrompt: true, bosToken: "", eosToken: "", tools: tools, options: options)
            == "True False True  True 14 Nov 2023 / Nov 14 2023 a,b")
    }

    @Test func strftimeUsesTheGivenClock() throws {
        var options = TemplateRenderOptions()
        options.now = Date(timeIntervalSince1970: 1_700_000_000)
        options.timeZone = TimeZone(identifier: "UTC")!
        let template = try ChatTemplate(source: "{{ strftime_now('%d %b %Y %H:%M') }}")
        #expect(try template.render([:], options: options) == "14 Nov 2023 22:13")
    }
}

@Suite struct DocumentationTests {
    /// The example in ChatTemplate's documentation, as written there.
    @Test func chatTemplateExampleRenders() throws {
        let template = try ChatTemplate(source: "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
        let prompt = try template.render(messages: [["role": "user", "content": "Hi"]],
                                         addGenerationPrompt: true, bosToken: "<s>", eosToken: "</s>")
        #expect(prompt == "user: Hi\n")
    }
}
