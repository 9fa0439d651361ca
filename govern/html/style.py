"""The one stylesheet every report inlines: system fonts only, prints well, no assets."""

CSS = """
:root { color-scheme: light; --ink: #1f2328; --muted: #57606a; --line: #d0d7de;
  --soft: #f6f8fa; --accent: #0072B2; --bad: #cf222e; --warn: #9a6700; --good: #1a7f37; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header.page { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--soft); }
header.page h1 { margin: 0 0 4px; font-size: 22px; }
header.page p { margin: 0; color: var(--muted); }
nav.toc { position: sticky; top: 0; z-index: 1; background: #fff; border-bottom: 1px solid var(--line);
  padding: 6px 28px; font-size: 13px; }
nav.toc a { margin-right: 16px; color: var(--accent); text-decoration: none; }
main { padding: 8px 28px 40px; max-width: 1280px; }
section { margin-top: 26px; }
h2 { font-size: 18px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
a { color: var(--accent); }
.figures { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.figure { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 140px; }
.figure .value { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
.figure .name { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.bad td { color: var(--bad); }
tr.good td { color: var(--good); }
code, pre { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 12.5px; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
  white-space: pre-wrap; word-break: break-word; max-height: 320px; overflow: auto; }
details { margin: 6px 0; }
details > summary { cursor: pointer; }
details.class { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; margin: 10px 0; }
details.class[open] { padding-bottom: 12px; }
details.class > summary { font-weight: 600; }
.row { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
.chart { max-width: 100%; height: auto; display: block; }
.note { color: var(--muted); }
.tag { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px; border: 1px solid var(--line); }
.tag.error, .tag.new, .tag.slower, .tag.failed, .tag.timeout { color: var(--bad); border-color: var(--bad); }
.tag.warning, .tag.interrupted { color: var(--warn); border-color: var(--warn); }
.tag.gone, .tag.faster, .tag.ok { color: var(--good); border-color: var(--good); }
footer { color: var(--muted); font-size: 12px; padding: 14px 28px; border-top: 1px solid var(--line); }
@media print { nav.toc { position: static; } details { break-inside: avoid; } }
"""
