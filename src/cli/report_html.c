/* report_html.c - report.html of `scope-profiler report`: one self-contained
 * page (no network, no framework) with the input files and their metadata,
 * the region colours, a sortable summary table (inspect's statistics) and
 * every chart as inline SVG, plus a little plain JavaScript:
 *
 *  - wheel zooms and drag pans the time axis of the Gantt chart, the flame
 *    chart and the flame graph (by changing the viewBox of the plot's nested
 *    <svg>; panels of one file in one chart move together; the axis ticks,
 *    frame labels and one-pixel minimum widths are redrawn for the view);
 *  - a click on any mark, label, legend entry or table row highlights that
 *    region in every chart and in the table (data-ri = the region's colour
 *    index); a second click clears it;
 *  - the rank selector hides other ranks' panels (Gantt, flame chart), marks
 *    (time series) or dims their bars (imbalance);
 *  - table headers sort.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/report_internal.h"
#include "scope_profiler.h"

static const char *const page_css =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1b1b1b;"
    "background:#fafafa}\n"
    "header{background:#24323f;color:#fff;padding:14px 24px}header h1{margin:0;font-size:22px}"
    "header .sub{margin:4px 0 0;color:#c9d3dc;font-size:13px}\n"
    "#toolbar{position:sticky;top:0;z-index:5;background:#eef1f4;border-bottom:1px solid #cfd6dc;"
    "padding:8px 24px;display:flex;gap:14px;align-items:center;flex-wrap:wrap;font-size:13px}\n"
    "#toolbar a{color:#1f5f99;text-decoration:none}#hl-name{font-weight:bold;color:#8a2b00}\n"
    "main{padding:8px 24px 40px}section{margin:18px 0 26px}h2{font-size:18px;margin:0 0 8px}\n"
    ".chart-wrap{overflow-x:auto;background:#fff;border:1px solid #dde2e6;border-radius:4px}\n"
    ".why{color:#8a5a00;background:#fff8e5;border:1px solid #f0d890;padding:8px 12px;"
    "border-radius:4px}\n"
    "table{border-collapse:collapse;font-size:12.5px;background:#fff}"
    "th,td{border:1px solid #dde2e6;padding:3px 8px;text-align:right;white-space:nowrap}"
    "td.name,th.name,td.txt{text-align:left}th{background:#eef1f4;cursor:pointer;user-select:none}"
    "th[aria-sort=ascending]::after{content:' ▲'}th[aria-sort=descending]::after{content:' ▼'}\n"
    "tr.hl td{background:#fff1c9}tbody tr{cursor:pointer}tbody tr:hover td{background:#f3f6f9}\n"
    ".sw{display:inline-block;width:11px;height:11px;margin-right:6px;vertical-align:-1px;"
    "border-radius:2px}\n"
    "#legend span.lg{display:inline-block;margin:2px 12px 2px 0;cursor:pointer;font-size:12.5px}"
    "#legend span.lg.hl{font-weight:bold;text-decoration:underline}\n"
    "details{font-size:12.5px;margin:4px 0}details pre{white-space:pre-wrap;word-break:break-all;"
    "margin:2px 0}\n"
    ".notes{font-size:12.5px;color:#555}svg.chart{display:block}\n"
    ".lanelabel{cursor:pointer}.dim{opacity:.18}\n";

/* The page's script. Plain ES5-ish JavaScript: no framework, no network. */
static const char *const page_js[] = {
    "(function(){'use strict';\n",
    "var NS='http://www.w3.org/2000/svg';\n",
    "var charts=[].slice.call(document.querySelectorAll('svg.chart'));\n",
    "var names={};[].forEach.call(document.querySelectorAll('#legend [data-ri]'),function(e){"
    "names[e.getAttribute('data-ri')]=e.getAttribute('data-region');});\n",
    "var current=null,dragged=false;\n",
    "function highlight(ri){current=(ri===null||current===ri)?null:ri;\n",
    " [].forEach.call(document.querySelectorAll('.hl'),function(e){e.classList.remove('hl');});\n",
    " charts.forEach(function(c){c.classList.toggle('has-hl',current!==null);});\n",
    " if(current!==null){[].forEach.call(document.querySelectorAll('[data-ri=\"'+current+'\"]'),"
    "function(e){e.classList.add('hl');});}\n",
    " document.getElementById('hl-name').textContent=current===null?'':'highlighted: '+"
    "(names[current]||current);}\n",
    "document.addEventListener('click',function(ev){if(dragged){dragged=false;return;}\n",
    " var t=ev.target;var e=t&&t.closest?t.closest('[data-ri]'):null;\n",
    " if(e)highlight(e.getAttribute('data-ri'));});\n",
    "document.getElementById('clear-hl').addEventListener('click',function(ev){"
    "ev.stopPropagation();highlight(null);});\n",
    "function relayout(c){var g=c.querySelector('.blocks');if(!g)return;var y=0;\n",
    " [].forEach.call(g.children,function(b){if(b.style.display==='none')return;"
    "b.setAttribute('transform','translate(0,'+y+')');y+=parseFloat(b.getAttribute('data-h'));});\n",
    " var h=parseFloat(g.getAttribute('data-y0'))+y+6;c.setAttribute('height',h);"
    "c.setAttribute('viewBox','0 0 '+c.getAttribute('width')+' '+h);}\n",
    "function selectRank(r){charts.forEach(function(c){var mode=c.getAttribute('data-rankmode');\n",
    " if(mode==='1'){var g=c.querySelector('.blocks'),old=g.querySelector('.rank-missing');"
    "if(old)g.removeChild(old);\n",
    "  var blks=[].slice.call(c.querySelectorAll('.blocks > .blk'));"
    "var has=blks.some(function(b){return b.getAttribute('data-rank')===r;});\n",
    "  blks.forEach(function(b){var br=b.getAttribute('data-rank');b.style.display=(r==='all'||"
    "br===null||br===r)?'':'none';});\n",
    "  if(r!=='all'&&!has){var m=el('g',{'class':'blk rank-missing','data-h':24});"
    "m.appendChild(el('text',{'class':'note',x:10,y:16},'rank '+r+' is not drawn in this chart "
    "(see --ranks, --flame-ranks, --max-bars)'));g.insertBefore(m,g.firstChild);}\n",
    "  relayout(c);}\n",
    " else if(mode==='2'){[].forEach.call(c.querySelectorAll('.bar[data-rank]'),function(e){"
    "e.style.display=(r==='all'||e.getAttribute('data-rank')===r)?'':'none';});}\n",
    " else if(mode==='3'){[].forEach.call(c.querySelectorAll('.bar[data-rank]'),function(e){"
    "e.classList.toggle('dim',r!=='all'&&e.getAttribute('data-rank')!==r);});}});}\n",
    "var sel=document.getElementById('rank-select');"
    "sel.addEventListener('change',function(){selectRank(sel.value);});\n",
    "function nice(range){var raw=range/7,mag=Math.pow(10,Math.floor(Math.log(raw)/Math.LN10)),"
    "f=raw/mag;return(f<=1?1:f<=2?2:f<=5?5:10)*mag;}\n",
    "function unitFor(s){return s>=1?['s',1]:s>=1e-3?['ms',1e-3]:s>=1e-6?['µs',1e-6]:"
    "['ns',1e-9];}\n",
    "function el(name,attrs,text){var e=document.createElementNS(NS,name);for(var k in attrs)"
    "e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;return e;}\n",
    "function redraw(p){var vb=p.viewBox.baseVal,W=p.width.baseVal.value,k=W/vb.width;\n",
    " var px=p.x.baseVal.value,py=p.y.baseVal.value,panel=p.parentNode;\n",
    " var t0=parseFloat(p.getAttribute('data-t0')),t1=parseFloat(p.getAttribute('data-t1'));\n",
    " var a=t0+vb.x/W*(t1-t0),b=t0+(vb.x+vb.width)/W*(t1-t0),time=p.getAttribute('data-axis')"
    "==='time';\n",
    " var u=time?unitFor(b-a):['%',1],ax=panel.querySelector('.xaxis');\n",
    " if(ax){var tg=ax.querySelector('.ticks');while(tg.firstChild)tg.removeChild(tg.firstChild);\n",
    "  var st=nice(b-a),y=parseFloat(ax.querySelector('.axis').getAttribute('y1'));\n",
    "  for(var v=Math.ceil(a/st-1e-9)*st;v<=b+st*1e-9;v+=st){var x=px+(v-a)/(b-a)*W;\n",
    "   tg.appendChild(el('line',{'class':'tick',x1:x,x2:x,y1:y,y2:y+4}));\n",
    "   tg.appendChild(el('text',{'class':'tl',x:x,y:y+15,'text-anchor':'middle'},"
    "String(parseFloat((Math.abs(v)<st*1e-9?0:v/u[1]).toPrecision(6)))));}\n",
    "  var at=ax.querySelector('.at');if(at&&time)at.textContent=at.textContent.replace("
    "/\\[[^\\]]*\\]$/,'['+u[0]+']');}\n",
    " [].forEach.call(p.querySelectorAll('.bar[data-w]'),function(r){r.setAttribute('width',"
    "Math.max(parseFloat(r.getAttribute('data-w')),1/k));});\n",
    " var lg=panel.querySelector('.flabels');if(lg){while(lg.firstChild)lg.removeChild("
    "lg.firstChild);\n",
    "  [].forEach.call(p.querySelectorAll('.bar'),function(r){var x=r.x.baseVal.value,"
    "w=r.hasAttribute('data-w')?parseFloat(r.getAttribute('data-w')):r.width.baseVal.value;\n",
    "   var x0=Math.max((x-vb.x)*k,0),x1=Math.min((x+w-vb.x)*k,W);if(x1-x0<20)return;\n",
    "   var n=Math.floor((x1-x0-6)/6.2),s=r.getAttribute('data-region');if(n<3)return;"
    "if(s.length>n)s=s.slice(0,n-1)+'…';\n",
    "   var ri=r.getAttribute('data-ri');lg.appendChild(el('text',{'class':'fl t'+ri,x:px+x0+3,"
    "y:py+r.y.baseVal.value+10},s));});}}\n",
    "function setView(p,x,w){var W=p.width.baseVal.value;w=Math.min(W,Math.max(W/20000,w));"
    "x=Math.max(0,Math.min(W-w,x));\n",
    " var c=p.ownerSVGElement;while(c&&!c.classList.contains('chart'))c=c.parentNode;\n",
    " var f=p.getAttribute('data-file');\n",
    " [].forEach.call(c.querySelectorAll('svg.plot.zoom[data-file=\"'+f+'\"]'),function(q){"
    "var H=q.height.baseVal.value;q.setAttribute('viewBox',x+' 0 '+w+' '+H);redraw(q);});}\n",
    "[].forEach.call(document.querySelectorAll('svg.plot.zoom'),function(p){var W="
    "p.width.baseVal.value,drag=null;\n",
    " p.addEventListener('wheel',function(ev){ev.preventDefault();var vb=p.viewBox.baseVal,"
    "r=p.getBoundingClientRect();\n",
    "  var fx=(ev.clientX-r.left)/r.width,cx=vb.x+fx*vb.width,nw=vb.width*Math.exp("
    "(ev.deltaY||0)*0.0015);\n",
    "  nw=Math.min(W,Math.max(W/20000,nw));setView(p,cx-fx*nw,nw);},{passive:false});\n",
    " p.addEventListener('mousedown',function(ev){if(ev.button!==0)return;var vb=p.viewBox.baseVal;"
    "drag={x:ev.clientX,vx:vb.x,vw:vb.width,moved:false};ev.preventDefault();});\n",
    " window.addEventListener('mousemove',function(ev){if(!drag)return;var dx=ev.clientX-drag.x;"
    "if(Math.abs(dx)>3)drag.moved=true;if(!drag.moved)return;\n",
    "  var r=p.getBoundingClientRect();setView(p,drag.vx-dx*drag.vw/r.width,drag.vw);});\n",
    " window.addEventListener('mouseup',function(){if(drag&&drag.moved)dragged=true;drag=null;"
    "setTimeout(function(){dragged=false;},0);});\n",
    " p.addEventListener('dblclick',function(){setView(p,0,W);});});\n",
    "[].forEach.call(document.querySelectorAll('table.sortable'),function(t){\n",
    " [].forEach.call(t.tHead.rows[0].cells,function(th,i){th.addEventListener('click',function(){\n",
    "  var desc=th.getAttribute('aria-sort')!=='descending';if(th.classList.contains('name'))"
    "desc=th.getAttribute('aria-sort')==='ascending';\n",
    "  [].forEach.call(t.tHead.rows[0].cells,function(o){o.removeAttribute('aria-sort');});\n",
    "  th.setAttribute('aria-sort',desc?'descending':'ascending');var tb=t.tBodies[0],"
    "rows=[].slice.call(tb.rows);\n",
    "  rows.sort(function(r1,r2){var a=r1.cells[i].getAttribute('data-v'),b=r2.cells[i]."
    "getAttribute('data-v');\n",
    "   var x=parseFloat(a),y=parseFloat(b),c;if(isNaN(x)&&isNaN(y)&&a!=='nan'&&b!=='nan')"
    "c=a<b?-1:a>b?1:0;\n",
    "   else if(isNaN(x)||isNaN(y)){return isNaN(x)-isNaN(y);}else c=x<y?-1:x>y?1:0;"
    "return desc?-c:c;});\n",
    "  rows.forEach(function(r){tb.appendChild(r);});});});});\n",
    "window.spReport={ready:true,highlight:highlight,selectRank:selectRank,setView:setView};\n",
    "})();\n",
    NULL};

static void cell_num(FILE *o, double v, const char *fmt_kind) {
  if (!isfinite(v)) {
    fputs("<td data-v=\"nan\">-</td>", o);
    return;
  }
  if (!strcmp(fmt_kind, "s")) fprintf(o, "<td data-v=\"%.9g\">%.6g</td>", v, v / 1e9);
  else if (!strcmp(fmt_kind, "ratio")) fprintf(o, "<td data-v=\"%.9g\">%.2f</td>", v, v);
  else fprintf(o, "<td data-v=\"%.0f\">%.0f</td>", v, v);
}

static void summary_table(FILE *o, const struct rp_model *m) {
  fputs("<section id=\"summary\"><h2>Summary statistics</h2>\n<p class=\"notes\">Over the selected "
        "ranks, in seconds (as <code>scope-profiler inspect</code>). imbalance = slowest rank's "
        "total / mean rank total; own = inclusive time minus direct children. Click a header to "
        "sort, a row to highlight its region.</p>\n",
        o);
  fputs("<table id=\"summary-table\" class=\"sortable\"><thead><tr>", o);
  if (m->nfiles > 1) fputs("<th class=\"name\">file</th>", o);
  fputs("<th class=\"name\">region</th><th>ranks</th><th>calls</th><th>total [s]</th>"
        "<th>avg [s]</th><th>min [s]</th><th>max [s]</th><th>std [s]</th><th>p50 [s]</th>"
        "<th>p95 [s]</th><th>p99 [s]</th><th>imbalance</th><th>own [s]</th></tr></thead><tbody>\n",
        o);
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const struct rp_file *f = &m->files[fi];
    for (size_t k = 0; k < f->nregs; k++) {
      const sp_region_stats *s = &f->regs[k].s;
      size_t g = f->regs[k].g;
      fprintf(o, "<tr data-ri=\"%zu\">", g);
      if (m->nfiles > 1) {
        fputs("<td class=\"txt\" data-v=\"", o);
        rp_xml(o, f->label);
        fputs("\">", o);
        rp_xml(o, f->label);
        fputs("</td>", o);
      }
      fputs("<td class=\"name\" data-v=\"", o);
      rp_xml(o, m->regions[g].name);
      fprintf(o, "\"><span class=\"sw\" style=\"background:%s\"></span>", m->regions[g].color);
      rp_xml(o, m->regions[g].name);
      fputs("</td>", o);
      cell_num(o, (double)s->ranks, "n");
      cell_num(o, (double)s->count, "n");
      cell_num(o, (double)s->total_ns, "s");
      cell_num(o, s->mean_ns, "s");
      cell_num(o, (double)s->min_ns, "s");
      cell_num(o, (double)s->max_ns, "s");
      cell_num(o, s->std_ns, "s");
      cell_num(o, s->has_percentiles ? s->p50_ns : NAN, "s");
      cell_num(o, s->has_percentiles ? s->p95_ns : NAN, "s");
      cell_num(o, s->has_percentiles ? s->p99_ns : NAN, "s");
      cell_num(o, s->imbalance, "ratio");
      cell_num(o, s->has_own ? (double)s->own_ns : NAN, "s");
      fputs("</tr>\n", o);
    }
  }
  fputs("</tbody></table></section>\n", o);
}

static void files_section(FILE *o, const struct rp_model *m) {
  fputs("<section id=\"files\"><h2>Inputs</h2>\n<table><thead><tr><th class=\"name\">label</th>"
        "<th class=\"name\">file</th><th class=\"name\">layout</th><th>ranks</th>"
        "<th>regions</th><th>events</th></tr></thead><tbody>\n",
        o);
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const struct rp_file *f = &m->files[fi];
    fputs("<tr><td class=\"txt\">", o);
    rp_xml(o, f->label);
    fputs("</td><td class=\"txt\">", o);
    rp_xml(o, f->abs);
    fprintf(o, "</td><td class=\"txt\">schema %d, %s</td><td>%zu of %zu</td><td>%zu</td>",
            sp_results_schema(f->r), sp_results_layout(f->r), f->nranks,
            sp_results_num_ranks(f->r), f->nregs);
    fprintf(o, "<td>%llu</td></tr>\n", (unsigned long long)sp_results_num_events(f->r));
  }
  fputs("</tbody></table>\n", o);
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const struct rp_file *f = &m->files[fi];
    fputs("<details><summary>metadata of ", o);
    rp_xml(o, f->label);
    fprintf(o, " (%zu entries)</summary><table>", sp_results_num_metadata(f->r));
    for (size_t i = 0; i < sp_results_num_metadata(f->r); i++) {
      const sp_metadata_entry *e = sp_results_metadata_at(f->r, i);
      fputs("<tr><td class=\"txt\">", o);
      rp_xml(o, e->key);
      fputs("</td><td class=\"txt\"><pre>", o);
      rp_xml_clip(o, e->text, 2000);
      fputs("</pre></td></tr>", o);
    }
    fputs("</table></details>\n", o);
  }
  fputs("</section>\n", o);
}

int rp_write_html(FILE *o, const struct rp_model *m, const struct rp_svg *charts, size_t n) {
  time_t now = time(NULL);
  char when[64];
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<link rel=\"icon\" href=\"data:,\">\n<title>",
        o);
  rp_xml(o, m->o->title);
  fprintf(o, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header><h1>", page_css);
  rp_xml(o, m->o->title);
  fprintf(o, "</h1><p class=\"sub\">scope-profiler %s — %zu input file%s — %zu regions — "
             "generated %s</p></header>\n",
          sp_version_string(), m->nfiles, m->nfiles == 1 ? "" : "s", m->nregions, when);
  fputs("<nav id=\"toolbar\"><label>rank <select id=\"rank-select\"><option value=\"all\">all "
        "ranks</option>",
        o);
  for (size_t i = 0; i < m->nall_ranks; i++)
    fprintf(o, "<option value=\"%lld\">rank %lld</option>", (long long)m->all_ranks[i],
            (long long)m->all_ranks[i]);
  fputs("</select></label><button id=\"clear-hl\" type=\"button\">clear highlight</button>"
        "<span id=\"hl-name\"></span><span>charts:",
        o);
  for (size_t i = 0; i < n; i++) {
    fprintf(o, " <a href=\"#sec-%s\">", charts[i].id);
    const char *t = charts[i].id;
    rp_xml(o, t);
    fputs("</a>", o);
  }
  fputs(" · <a href=\"#summary\">table</a> · <a href=\"region_statistics.json\">"
        "region_statistics.json</a></span></nav>\n<main>\n",
        o);
  files_section(o, m);
  fputs("<section id=\"legend\"><h2>Regions</h2>", o);
  for (size_t i = 0; i < m->nregions; i++) {
    fprintf(o, "<span class=\"lg\" data-ri=\"%zu\" data-region=\"", i);
    rp_xml(o, m->regions[i].name);
    fprintf(o, "\"><span class=\"sw\" style=\"background:%s\"></span>", m->regions[i].color);
    rp_xml(o, m->regions[i].name);
    fputs("</span>", o);
  }
  if (!m->nregions) fputs("<p class=\"why\">No region matches the selected filters.</p>", o);
  fputs("</section>\n", o);
  summary_table(o, m);
  for (size_t i = 0; i < n; i++) {
    fprintf(o, "<section class=\"chart-section\" id=\"sec-%s\">", charts[i].id);
    if (!charts[i].svg) { /* a drawn chart carries its title */
      fputs("<h2>", o);
      rp_xml(o, charts[i].title);
      fputs("</h2>\n", o);
    }
    if (charts[i].svg) {
      fprintf(o, "<div class=\"chart-wrap\">\n");
      /* the standalone SVG documents are inlined as they are: they are
       * well-formed XML, which HTML parses the same way */
      fwrite(charts[i].svg, 1, charts[i].len, o);
      fprintf(o, "</div><p class=\"notes\"><a href=\"%s\">%s</a></p>\n", charts[i].file,
              charts[i].file);
    } else {
      fputs("<p class=\"why\">Not drawn: ", o);
      rp_xml(o, charts[i].why ? charts[i].why : "");
      fputs("</p>\n", o);
    }
    fputs("</section>\n", o);
  }
  fputs("</main>\n<script>\n", o);
  for (size_t i = 0; page_js[i]; i++) fputs(page_js[i], o);
  fputs("</script>\n</body></html>\n", o);
  return ferror(o) ? -1 : 0;
}
