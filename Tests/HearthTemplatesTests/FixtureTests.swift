import Foundation
import HearthCore
import HearthTemplates
import HearthTestSupport
import Testing

/// One model template rendered for one conversation, against what Python jinja2 rendered
/// (Tests/Fixtures/templates, made by scripts/make-template-fixtures.py).
struct FixtureCase: Sendable, CustomTestStringConvertible {
    let template: String
    let conversation: String
    var testDescription: String { "\(template) / \(conversation)" }
}

enum Fixtures {
    static let directory = TestFiles.packageRoot.appendingPathComponent("Tests/Fixtures/templates")
    /// llama.cpp's collection of model templates, extracted by scripts/fetch-models.
    static let modelTemplates = TestFiles.packageRoot.appendingPathComponent("models/templates")

    static let document: TemplateObject = {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent("conversations.json")),
            case .object(let object) = try? TemplateValue(jsonData: data)
        else { return TemplateObject() }
        return object
    }()

    /// Each template's own variables (its special tokens…), the fixtures' templates first, then llama.cpp's.
    static let templates: [(name: String, variables: TemplateObject, file: URL)] = {
        var result: [(name: String, variables: TemplateObject, file: URL)] = []
        for (section, folder) in [("templates", directory), ("model_templates", modelTemplates)] {
            guard case .object(let entries) = document[section] else { continue }
            for (name, value) in entries.entries {
                guard case .object(let variables) = value else { continue }
                result.append((name, variables, folder.appendingPathComponent("\(name).jinja")))
            }
        }
        return result
    }()

    static var templateNames: [String] { templates.map(\.name) }

    static var conversations: [TemplateObject] {
        guard case .array(let items) = document["conversations"] else { return [] }
        return items.compactMap { if case .object(let o) = $0 { return o } else { return nil } }
    }

    static let cases: [FixtureCase] = templateNames.flatMap { template in
        conversations.compactMap { conversation in
            guard case .string(let name) = conversation["name"] else { return nil }
            return FixtureCase(template: template, conversation: name)
        }
    }

    /// The template's source, or an error naming scripts/fetch-models when llama.cpp's are not here.
    static func source(of template: String) throws -> String {
        guard let file = templates.first(where: { $0.name == template })?.file else {
            throw TestFiles.Missing(description: "No template \(template) in conversations.json")
        }
        guard FileManager.default.fileExists(atPath: file.path) else {
            throw TestFiles.Missing(description: "Chat template \(file.lastPathComponent) is missing: run scripts/fetch-models first.")
        }
        return try String(contentsOf: file, encoding: .utf8)
    }

    /// Renders the case as scripts/make-template-fixtures.py does: through the conversation helper,
    /// which passes llama.cpp's server variables, with the template's and the conversation's own on top.
    static func render(_ template: ChatTemplate, _ fixture: FixtureCase) throws -> String {
        let variables = templates.first { $0.name == fixture.template }?.variables ?? TemplateObject()
        let conversation = conversations.first { $0["name"] == .string(fixture.conversation) }!
        var extra: [String: TemplateValue] = [:]
        for (key, value) in variables.entries where key != "bos_token" && key != "eos_token" { extra[key] = value }
        if case .object(let more) = conversation["extra"] {
            for (key, value) in more.entries { extra[key] = value }
        }
        guard case .array(let messages) = conversation["messages"] else { return "" }
        var tools: [TemplateValue]?
        if case .array(let items) = conversation["tools"] { tools = items }
        func token(_ key: String) -> String {
            if case .string(let text) = variables[key] { return text }
            return ""
        }
        return try template.render(
            messages: messages.compactMap { if case .object(let o) = $0 { return o } else { return nil } },
            addGenerationPrompt: conversation["add_generation_prompt"] == .bool(true),
            bosToken: token("bos_token"), eosToken: token("eos_token"), tools: tools, extra: extra, options: options)
    }

    static var options: TemplateRenderOptions {
        var options = TemplateRenderOptions()
        options.timeZone = TimeZone(identifier: "UTC")!
        if case .string(let now) = document["now"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = options.timeZone
            formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
            options.now = formatter.date(from: now)!
        }
        return options
    }
}

@Suite struct FixtureTests {
    @Test func everyTemplateHasItsConversations() {
        #expect(Fixtures.templateNames.count >= 70, "Tests/Fixtures/templates/conversations.json did not load")
        #expect(Fixtures.cases.count == Fixtures.templateNames.count * Fixtures.conversations.count)
        #expect(Fixtures.conversations.count >= 4)
    }

    /// A template that refuses most conversations would test little: each must render at least four.
    @Test(arguments: Fixtures.templateNames)
    func rendersAtLeastFourConversations(_ template: String) throws {
        let folder = Fixtures.directory.appendingPathComponent("expected/\(template)")
        let rendered = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".txt") }
        #expect(rendered.count >= 4)
    }

    @Test(arguments: Fixtures.cases)
    func rendersAsJinja2(_ fixture: FixtureCase) throws {
        let template = try ChatTemplate(source: try Fixtures.source(of: fixture.template))
        let expected = Fixtures.directory.appendingPathComponent("expected/\(fixture.template)/\(fixture.conversation)")
        if let text = try? Data(contentsOf: expected.appendingPathExtension("txt")) {
            let rendered = try Fixtures.render(template, fixture)
            let expectedText = String(decoding: text, as: UTF8.self)
            #expect(rendered.utf8.elementsEqual(expectedText.utf8), "rendered:\n\(rendered)\nexpected:\n\(expectedText)")
            return
        }
        let failure = try String(contentsOf: expected.appendingPathExtension("error"), encoding: .utf8)
        let error = #expect(throws: HearthError.self) { try Fixtures.render(template, fixture) }
        // The template's own raise_exception message must come through unchanged; Python's
        // TypeErrors only need to be refusals too.
        if failure.hasPrefix("TemplateError: "), case .invalidTemplate(_, _, let reason) = error {
            #expect(reason == failure.dropFirst("TemplateError: ".count).trimmingCharacters(in: .newlines))
        }
    }
}
