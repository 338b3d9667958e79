import Testing
import HearthTokenizers

/// Word cuts of each pre-tokenizer on the cases where the regex families differ.
@Suite struct BPEPreTokenizerTests {
    @Test func gpt2() {
        let pre = BPEPreTokenizer.gpt2
        #expect(pre.split("Hello world") == ["Hello", " world"])
        #expect(pre.split("I'm don'T") == ["I", "'m", " don", "'", "T"])
        #expect(pre.split("a  b") == ["a", " ", " b"])
        #expect(pre.split("a   \n") == ["a", "   \n"])
        #expect(pre.split("12345 67") == ["12345", " 67"])
        #expect(pre.split("x?! (y)") == ["x", "?!", " (", "y", ")"])
        #expect(pre.split("café 日本") == ["café", " 日本"])
    }

    @Test func smollmSplitsEveryDigit() {
        let pre = BPEPreTokenizer.smollm
        #expect(pre.split("12345 67") == ["1", "2", "3", "4", "5", " ", "6", "7"])
        #expect(pre.split("v2 is ²") == ["v", "2", " is", " ", "²"])
        #expect(pre.split("Hello  world") == ["Hello", " ", " world"])
    }

    @Test func llama3() {
        let pre = BPEPreTokenizer.llama3
        #expect(pre.split("12345 67") == ["123", "45", " ", "67"])
        #expect(pre.split("Hello WORLD's don'T") == ["Hello", " WORLD", "'s", " don", "'T"])
        #expect(pre.split("a\n\n b") == ["a", "\n\n", " b"])
        #expect(pre.split("x...\n\ny") == ["x", "...\n\n", "y"])
        #expect(pre.split("\tword") == ["\tword"])
        #expect(pre.split("a  b") == ["a", " ", " b"])
    }

    @Test func qwen2SplitsEveryDigit() {
        let pre = BPEPreTokenizer.qwen2
        #expect(pre.split("12345 67") == ["1", "2", "3", "4", "5", " ", "6", "7"])
        #expect(pre.split("Hello WORLD's") == ["Hello", " WORLD", "'s"])
    }

    @Test func defaultCutsPunctuationThenDigitTriples() {
        let pre = BPEPreTokenizer.default
        #expect(pre.split("Hello, world!!! 1234567") == ["Hello", ",", " world", "!!!", " ", "123", "456", "7"])
        #expect(pre.split("a+b=c") == ["a", "+", "b", "=", "c"])
    }

    @Test func emptyText() {
        for pre in BPEPreTokenizer.allCases {
            #expect(pre.split("").isEmpty)
        }
    }
}
