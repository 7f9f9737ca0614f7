/**
 * The course's languages: every README, docs page and exercise statement exists in each of
 * them, side by side (`README.md`, `README.ja.md`, `README.zh.md`). English is the original.
 */

export const LANGS = ["en", "ja", "zh"] as const;
export type Lang = (typeof LANGS)[number];

export const LANGUAGE: Record<
  Lang,
  {
    /** The chapter README's file name. */
    readme: string;
    /** What a page's file name ends with (`architecture.ja.md`). */
    suffix: string;
    /** The language's own name, as the switch and the language line show it. */
    name: string;
    /** The HTML lang attribute: it picks the right CJK glyphs. */
    html: string;
  }
> = {
  en: { readme: "README.md", suffix: ".md", name: "English", html: "en" },
  ja: { readme: "README.ja.md", suffix: ".ja.md", name: "日本語", html: "ja" },
  zh: { readme: "README.zh.md", suffix: ".zh.md", name: "中文", html: "zh-Hans" },
};

/** The language a Markdown page is written in, by its name: `x.ja.md` → ja, `x.md` → en. */
export function langOf(file: string): Lang {
  return LANGS.find((lang) => lang !== "en" && file.endsWith(LANGUAGE[lang].suffix)) ?? "en";
}

/** The same page in another language: `docs/architecture.md`, zh → `docs/architecture.zh.md`. */
export function inLanguage(file: string, lang: Lang): string {
  const stem = file.slice(0, file.length - LANGUAGE[langOf(file)].suffix.length);
  return `${stem}${LANGUAGE[lang].suffix}`;
}
