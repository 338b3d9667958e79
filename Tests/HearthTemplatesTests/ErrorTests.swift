import Foundation
import HearthFormats
import HearthTemplates
import Testing

/// Where broken templates fail, and how renders that would never end are stopped.
@Suite struct ErrorTests {
    private func failure(_ body: () throws -> Void) -> (line: Int, column: Int, reason: String)? {
        do {
            try body()
        } catch HearthError.invalidTemplate(let line, let column, let reason) {
            return (line, column, reason)
        } catch {
            Issue.record("expected HearthError.invalidTemplate, got \(error)")
        }
        return nil
    }

    @Test func syntaxErrorNamesLineAndColumn() throws {
        let error = failure { _ = try ChatTemplate(source: "{{ messages }}\n  {{ 1 + }}") }
        #expect(error?.line == 2)
        #expect(error?.column == 10)
        #expect(error?.reason == "expected an expression, got '}}'")
        let message = HearthError.invalidTemplate(line: 2, column: 11, reason: "x").message
        #expect(message == "chat template line 2, column 11: x")
        #expect(HearthError.invalidTemplate(line: 1, column: 1, reason: "x").category == .input)
    }

    @Test func columnsCountCharactersNotBytes() {
        let error = failure { _ = try ChatTemplate(source: "日本語 {% if %}") }
        #expect(error?.line == 1)
        #expect(error?.column == 11)
    }

    @Test func unknownTagAndFilterAreFoundWhenParsing() {
        #expect(failure { _ = try ChatTemplate(source: "ok\n{% include 'x' %}") }?.reason == "unknown tag 'include'")
        let filter = failure { _ = try ChatTemplate(source: "{% for x in y %}\n{{ x | shout }}{% endfor %}") }
        #expect(filter?.line == 2)
        #expect(filter?.column == 6)
        #expect(filter?.reason == "No filter named 'shout'.")
    }

    @Test func unclosedBlockPointsAtTheEnd() {
        let error = failure { _ = try ChatTemplate(source: "{% for m in messages %}\n{{ m }}\n") }
        #expect(error?.line == 2)
        #expect(error?.reason == "unexpected end of template, expected 'else' or 'endfor'")
    }

    @Test func runtimeErrorsNameWhereTheyHappened() throws {
        let template = try ChatTemplate(source: "{% for m in messages %}\n  {{- raise_exception('bad role: ' + m.role) }}\n{% endfor %}")
        let error = failure { _ = try template.render(["messages": [["role": "tool"]]]) }
        #expect(error?.line == 2)
        #expect(error?.column == 7)
        #expect(error?.reason == "bad role: tool")
    }

    @Test func undefinedAttributeOfUndefinedFails() throws {
        let template = try ChatTemplate(source: "{{ message.content }}")
        #expect(failure { _ = try template.render([:]) }?.reason == "'message' is undefined")
        // A missing key is only undefined: it prints nothing and tests as undefined.
        let lenient = try ChatTemplate(source: "[{{ m.nothing }}]{{ m.nothing is defined }}")
        #expect(try lenient.render(["m": ["role": "user"]]) == "[]False")
    }

    @Test func hugeRangeIsRefusedAtOnce() throws {
        let template = try ChatTemplate(source: "{% for i in range(10**9) %}{{ i }}{% endfor %}")
        let start = Date()
        let error = failure { _ = try template.render([:]) }
        #expect(error?.reason.hasPrefix("Range too big") == true)
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test func stepBudgetStopsRunawayLoops() throws {
        let template = try ChatTemplate(source: "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
        let start = Date()
        let error = failure { _ = try template.render([:]) }
        #expect(error?.reason.contains("steps") == true)
        #expect(error?.line == 1)
        #expect(Date().timeIntervalSince(start) < 30)

        var options = TemplateRenderOptions()
        options.maxSteps = 1000
        let small = try ChatTemplate(source: "{% for i in range(1000) %}{{ i }}{% endfor %}")
        #expect(failure { _ = try small.render([:], options: options) }?.reason.contains("1000 steps") == true)
        options.maxSteps = 10_000
        #expect(try small.render([:], options: options).hasSuffix("999"))
    }

    @Test func outputLimitStopsRunawayText() throws {
        var options = TemplateRenderOptions()
        options.maxOutputBytes = 1 << 20
        let repeated = try ChatTemplate(source: "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}")
        #expect(failure { _ = try repeated.render([:], options: options) }?.reason.contains("bytes") == true)
        let doubling = try ChatTemplate(source: """
            {% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}
            """)
        #expect(failure { _ = try doubling.render([:], options: options) }?.reason.contains("bytes") == true)
        let multiplied = try ChatTemplate(source: "{{ 'abc' * 10**12 }}")
        #expect(failure { _ = try multiplied.render([:], options: options) } != nil)
    }

    @Test func recursionDepthIsBounded() throws {
        let template = try ChatTemplate(source: "{% macro down(n) %}{{ down(n + 1) }}{% endmacro %}{{ down(0) }}")
        let error = failure { _ = try template.render([:]) }
        #expect(error?.reason.contains("nest deeper than 200") == true)
    }

    @Test func aTemplateCanBeRenderedConcurrently() async throws {
        let template = try ChatTemplate(source: "{% for i in range(n) %}{{ i }}{% endfor %}")
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for n in 1...8 { group.addTask { try template.render(["n": .int(n)]) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(results).count == 8)
    }
}
