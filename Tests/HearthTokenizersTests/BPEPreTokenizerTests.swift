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

    @Test func qwen35KeepsCombiningMarksInLetterRuns() {
        // e + U+0301 (combining acute): Qwen 2 cuts the mark off as a symbol, Qwen 3.5 keeps it.
        #expect(BPEPreTokenizer.qwen2.split("cafe\u{301} x") == ["cafe", "\u{301}", " x"])
        #expect(BPEPreTokenizer.qwen35.split("cafe\u{301} x") == ["cafe\u{301}", " x"])
        #expect(BPEPreTokenizer.qwen35.split("12 ab") == ["1", "2", " ab"])
    }

    @Test func falconKeepsBackquotesWithPunctuation() {
        #expect(BPEPreTokenizer.falcon.split("a``b 1234") == ["a", "``", "b", " ", "123", "4"])
        #expect(BPEPreTokenizer.default.split("a``b") == ["a", "``", "b"])
    }

    @Test func deepseekLLM() {
        let pre = BPEPreTokenizer.deepseekLLM
        // Line breaks alone, one space kept before letters or punctuation, trailing whitespace cut off.
        #expect(pre.split("Hello, world!\n\nx  ") == ["Hello", ",", " world", "!", "\n", "\n", "x", "  "])
        // Each stage cuts the words of the one before: the punctuation class holds ASCII letters,
        // so it cuts "café" again; its CJK range starts at U+0800 and so holds Devanagari too.
        #expect(pre.split("café नमस्ते 你好 123") == ["caf", "é", " ", "नमस्ते", " ", "你好", " ", "123"])
    }

    @Test func deepseekCoder() {
        let pre = BPEPreTokenizer.deepseekCoder
        // "=" is a symbol, not punctuation, so it stays with the spaces around it.
        #expect(pre.split("x = 42;\n") == ["x", " = ", "4", "2", ";", "\n"])
        #expect(pre.split(" über 你好") == [" über", " ", "你好"])
    }

    @Test func gemma4CutsOnlyAtLineFeeds() {
        #expect(BPEPreTokenizer.gemma4.split("a b\n\nc\r\n") == ["a b", "\n\n", "c\r", "\n"])
    }

    @Test func emptyText() {
        for pre in BPEPreTokenizer.allCases {
            #expect(pre.split("").isEmpty)
        }
    }
}
