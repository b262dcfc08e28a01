// Syntax highlighting for code blocks: a small tokenizer for the languages agents show most
// (Python, JavaScript/TypeScript, JSON, shell, and a generic fallback). Tokens become spans
// whose text is set with textContent, so code is never parsed as HTML.

const KEYWORDS = {
  py: "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield match case",
  js: "async await break case catch class const continue default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while yield interface type enum implements",
  sh: "if then else elif fi for in do done case esac while until function return export local echo exit set unset",
  json: "true false null",
};
const ALIASES = {
  python: "py", py: "py", javascript: "js", js: "js", ts: "js", typescript: "js", tsx: "js",
  jsx: "js", json: "json", jsonc: "json", bash: "sh", sh: "sh", shell: "sh", zsh: "sh",
  console: "sh",
};

function rules(lang) {
  const comment = lang === "py" || lang === "sh" ? /#[^\n]*/y : /\/\/[^\n]*|\/\*[\s\S]*?\*\//y;
  return [
    ["comment", lang === "json" ? null : comment],
    ["string", /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/y],
    ["number", /\b(?:0x[\da-f]+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)\b/iy],
    ["word", /[A-Za-z_$][\w$]*/y],
    ["other", /\s+|./y],
  ].filter(([, re]) => re);
}

export function highlight(target, text, langName) {
  const lang = ALIASES[(langName || "").toLowerCase()] || (looksLikeJson(text) ? "json" : "generic");
  const keywords = new Set((KEYWORDS[lang] || KEYWORDS.py + " " + KEYWORDS.js).split(" "));
  const list = rules(lang);
  let pos = 0;
  let plain = "";
  const flush = () => {
    if (plain) target.append(document.createTextNode(plain));
    plain = "";
  };
  while (pos < text.length) {
    for (const [kind, re] of list) {
      re.lastIndex = pos;
      const m = re.exec(text);
      if (!m) continue;
      let cls = null;
      if (kind === "comment" || kind === "string" || kind === "number") cls = kind;
      else if (kind === "word" && keywords.has(m[0])) cls = "keyword";
      if (kind === "string" && lang === "json" && /^\s*:/.test(text.slice(pos + m[0].length))) cls = "key";
      if (cls) {
        flush();
        const s = document.createElement("span");
        s.className = `tok-${cls}`;
        s.textContent = m[0];
        target.append(s);
      } else {
        plain += m[0];
      }
      pos += m[0].length;
      break;
    }
  }
  flush();
}

function looksLikeJson(text) {
  const t = text.trim();
  return (t.startsWith("{") && t.endsWith("}")) || (t.startsWith("[") && t.endsWith("]"));
}
