// The site reads without this file. With it: one language at a time (remembered, and
// #ja or #zh opens a page in Japanese or Chinese) and the diff toggles.
(() => {
  const root = document.documentElement;
  const KEY = "course-lang";
  const LANGS = { en: "en", ja: "ja", zh: "zh-Hans" };
  const setLang = (lang) => {
    root.classList.remove(...Object.keys(LANGS).map((l) => `lang-${l}`));
    root.classList.add(`lang-${lang}`);
    root.lang = LANGS[lang];
    for (const button of document.querySelectorAll("[data-lang]")) {
      button.setAttribute("aria-pressed", String(button.dataset.lang === lang));
    }
  };
  let stored = null;
  try {
    stored = localStorage.getItem(KEY);
  } catch {}
  // #ja, #zh-<heading>, #en-<heading>: the language of the README a link stood for.
  const fromHash = /^#(en|ja|zh)(?:-|$)/.exec(location.hash)?.[1];
  const wanted = fromHash ?? stored;
  const current = () => Object.keys(LANGS).find((l) => root.classList.contains(`lang-${l}`));
  root.classList.add("js");
  setLang(wanted in LANGS ? wanted : "en");

  document.addEventListener("DOMContentLoaded", () => {
    setLang(current() ?? "en");
    for (const button of document.querySelectorAll("[data-lang]")) {
      button.addEventListener("click", () => {
        setLang(button.dataset.lang);
        try {
          localStorage.setItem(KEY, button.dataset.lang);
        } catch {}
      });
    }
    for (const tools of document.querySelectorAll(".diff-tools")) {
      tools.hidden = false;
      const files = () => tools.parentElement.querySelectorAll("details.file");
      for (const button of tools.querySelectorAll("[data-diff]")) {
        button.addEventListener("click", () => {
          const action = button.dataset.diff;
          if (action === "wrap") {
            tools.parentElement.classList.toggle("wrap");
            button.setAttribute(
              "aria-pressed",
              String(tools.parentElement.classList.contains("wrap")),
            );
            return;
          }
          for (const file of files()) file.open = action === "expand";
        });
      }
    }
  });
})();
