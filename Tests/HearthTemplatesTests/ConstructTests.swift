import Foundation
import HearthCore
import HearthTemplates
import HearthTestSupport
import Testing

/// One small template per language feature (Tests/Fixtures/templates/constructs.json), against
/// what Python jinja2 rendered for it in transformers' environment (constructs-expected.json).
struct Construct: Sendable, CustomTestStringConvertible {
    let name: String
    let template: String
    let context: [String: TemplateValue]
    let expected: TemplateObject
    var testDescription: String { name }

    static let all: [Construct] = {
        let directory = Fixtures.directory
        guard let data = try? Data(contentsOf: directory.appendingPathComponent("constructs.json")),
            case .array(let items) = try? TemplateValue(jsonData: data),
            let expectedData = try? Data(contentsOf: directory.appendingPathComponent("constructs-expected.json")),
            case .object(let expected) = try? TemplateValue(jsonData: expectedData)
        else { return [] }
        return items.compactMap { item in
            guard case .object(let object) = item, case .string(let name) = object["name"],
                case .string(let template) = object["template"], case .object(let context) = object["context"],
                case .object(let outcome) = expected[name]
            else { return nil }
            return Construct(name: name, template: template,
                             context: Dictionary(uniqueKeysWithValues: context.entries.map { ($0.key, $0.value) }),
                             expected: outcome)
        }
    }()
}

@Suite struct ConstructTests {
    @Test func constructsLoaded() {
        #expect(Construct.all.count >= 100, "Tests/Fixtures/templates/constructs.json did not load")
    }

    @Test(arguments: Construct.all)
    func rendersAsJinja2(_ construct: Construct) throws {
        let outcome: Result<String, Error> = Result {
            try ChatTemplate(source: construct.template).render(construct.context, options: Fixtures.options)
        }
        switch (construct.expected["output"], outcome) {
        case (.string(let expected)?, .success(let rendered)):
            #expect(rendered.utf8.elementsEqual(expected.utf8), "rendered:\n\(rendered)\nexpected:\n\(expected)")
        case (.string(let expected)?, .failure(let error)):
            Issue.record("expected \(expected.debugDescription), got \(error)")
        case (_, .success(let rendered)):
            Issue.record("expected \(construct.expected["error"].map { "\($0)" } ?? "an error"), rendered \(rendered.debugDescription)")
        case (_, .failure(let error)):
            guard case .invalidTemplate = error as? HearthError else {
                Issue.record("expected HearthError.invalidTemplate, got \(error)")
                return
            }
            if case .int(let line) = construct.expected["line"], case .invalidTemplate(let reported, _, _) = error as? HearthError {
                #expect(reported == line, "jinja2 reports line \(line)")
            }
            // raise_exception's message is the template's own words and must come through as written.
            if case .string(let message) = construct.expected["error"], message.hasPrefix("TemplateError: "),
                case .invalidTemplate(_, _, let reason) = error as? HearthError
            {
                #expect(reason == String(message.dropFirst("TemplateError: ".count)))
            }
        }
    }
}
