import Foundation
import HearthFormats
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

    static let document: TemplateObject = {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent("conversations.json")),
            case .object(let object) = try? TemplateValue(jsonData: data)
        else { return TemplateObject() }
        return object
    }()

    static var templateNames: [String] {
        guard case .object(let templates) = document["templates"] else { return [] }
        return templates.keys
    }

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

    /// The variables scripts/make-template-fixtures.py passes to jinja2 for this case.
    static func context(for fixture: FixtureCase) -> [String: TemplateValue] {
        var context: [String: TemplateValue] = [:]
        if case .object(let templates) = document["templates"], case .object(let tokens) = templates[fixture.template] {
            for (key, value) in tokens.entries { context[key] = value }
        }
        let conversation = conversations.first { $0["name"] == .string(fixture.conversation) }!
        if case .object(let extra) = conversation["extra"] {
            for (key, value) in extra.entries { context[key] = value }
        }
        context["messages"] = conversation["messages"]
        context["tools"] = conversation["tools"] ?? TemplateValue.none
        context["documents"] = TemplateValue.none
        context["add_generation_prompt"] = conversation["add_generation_prompt"]
        return context
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
        #expect(Fixtures.templateNames.count == 8, "Tests/Fixtures/templates/conversations.json did not load")
        #expect(Fixtures.cases.count == Fixtures.templateNames.count * Fixtures.conversations.count)
        #expect(Fixtures.conversations.count >= 5)
    }

    @Test(arguments: Fixtures.cases)
    func rendersAsJinja2(_ fixture: FixtureCase) throws {
        let source = try String(contentsOf: Fixtures.directory.appendingPathComponent("\(fixture.template).jinja"), encoding: .utf8)
        let template = try ChatTemplate(source: source)
        let expected = Fixtures.directory.appendingPathComponent("expected/\(fixture.template)/\(fixture.conversation)")
        let context = Fixtures.context(for: fixture)
        if let text = try? Data(contentsOf: expected.appendingPathExtension("txt")) {
            let rendered = try template.render(context, options: Fixtures.options)
            let expectedText = String(decoding: text, as: UTF8.self)
            #expect(rendered.utf8.elementsEqual(expectedText.utf8), "rendered:\n\(rendered)\nexpected:\n\(expectedText)")
            return
        }
        let failure = try String(contentsOf: expected.appendingPathExtension("error"), encoding: .utf8)
        let error = #expect(throws: HearthError.self) { try template.render(context, options: Fixtures.options) }
        // The template's own raise_exception message must come through unchanged; Python's
        // TypeErrors only need to be refusals too.
        if failure.hasPrefix("TemplateError: "), case .invalidTemplate(_, _, let reason) = error {
            #expect(reason == failure.dropFirst("TemplateError: ".count).trimmingCharacters(in: .newlines))
        }
    }
}
