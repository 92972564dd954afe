// Runs Lighthouse's Speed Index implementation (speedline-core, as Lighthouse's computed
// Speedline artifact calls it: fastMode, include speedIndex) and its exact mode on each visual
// trace `wirelab-engine browse --visual-trace FILE` wrote, with wirelab's time origin (the load's
// zero), and prints one JSON line per trace: speedline's Speed Index, first and last visual change
// (ms), and its visual progress. `wirelab-engine bench visual --compare` calls it.
//
//   node speedline.js TRACE.json…
'use strict';

const speedline = require('speedline-core');
const fs = require('fs');

async function one(path) {
  const trace = JSON.parse(fs.readFileSync(path, 'utf-8'));
  const origin = trace.metadata && trace.metadata.wirelab_time_origin_us;
  if (!origin) {
    throw new Error(`${path}: no metadata.wirelab_time_origin_us (not a wirelab visual trace)`);
  }
  const out = {trace: path};
  for (const [name, fastMode] of [['lighthouse', true], ['exact', false]]) {
    const r = await speedline(trace.traceEvents, {timeOrigin: origin, fastMode, include: 'speedIndex'});
    out[name] = {
      speed_index_ms: r.speedIndex,
      first_visual_change_ms: r.first,
      visually_complete_ms: r.complete,
      visual_progress: r.frames.map(f => [Math.round((f.getTimeStamp() - r.beginning) * 10) / 10, f.getProgress()]),
    };
  }
  return out;
}

(async () => {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node speedline.js TRACE.json…');
    process.exit(2);
  }
  let failed = 0;
  for (const f of files) {
    try {
      console.log(JSON.stringify(await one(f)));
    } catch (e) {
      failed++;
      console.log(JSON.stringify({trace: f, error: String(e && e.message || e)}));
    }
  }
  process.exit(failed ? 1 : 0);
})();
