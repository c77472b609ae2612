// The inputs inbox: what INPUT_REQUEST nodes ask (GET /api/inputs), each
// open one with a form drawn from its JSON Schema, answered with
// POST /api/inputs/{inputId} (an OPERATOR). The browser checks the
// schema's basic constraints before sending; the server checks it whole
// and its answer (or its 400, by field) is shown under the form.
import "./page.css";
import { useState } from "preact/hooks";
import { can } from "../../app/auth";
import { ApiError, api, ok, type Schemas } from "../../app/client";
import { setQuery } from "../../app/router";
import { JsonEditor, JsonView, parseJson } from "../../components/json";
import { Loading, ProblemView, useLoad } from "../../components/load";
import { checkValue, drawable, initialValue, SchemaForm, type FieldError, type Schema } from "../../components/schemaform";
import { Status, Time } from "../../components/status";
import type { Page, PageProps } from "../page";

type Input = Schemas["Input"];

function Inputs({ query }: PageProps) {
  const status = query.get("status") === "all" ? "all" : "open";
  const sessionId = query.get("sessionId") ?? "";
  const executionId = query.get("executionId") ?? "";
  const cursor = query.get("cursor") ?? "";
  const list = useLoad(
    () =>
      ok(api.GET("/api/inputs", {
        params: { query: { status, sessionId: sessionId || undefined, executionId: executionId || undefined, cursor: cursor || undefined, limit: 50 } },
      })),
    [status, sessionId, executionId, cursor],
  );
  return (
    <section class="inputs">
      <h1>Inputs</h1>
      <Filters status={status} sessionId={sessionId} executionId={executionId} />
      <ProblemView error={list.error} />
      {list.loading && !list.data ? <Loading what="inputs" /> : null}
      {list.data ? (
        <>
          <p class="muted" aria-live="polite">
            {list.data.inputs.length === 0 ? `No ${status === "open" ? "open " : ""}inputs.` : `${list.data.inputs.length} ${status === "open" ? "open " : ""}input(s) on this page, oldest first.`}
            {" "}<button type="button" class="link" onClick={list.reload}>Refresh</button>
          </p>
          {!can("OPERATOR") ? <p class="muted small">Your key is a VIEWER: you see the inputs; an OPERATOR answers them.</p> : null}
          <ul class="input-list">
            {list.data.inputs.map((i) => (
              <InputCard key={i.inputId} input={i} />
            ))}
          </ul>
          <nav class="toolbar" aria-label="Pages">
            {cursor ? <button type="button" onClick={() => setQuery({ cursor: undefined })}>First page</button> : null}
            {list.data.nextCursor ? <button type="button" onClick={() => setQuery({ cursor: list.data!.nextCursor })}>Next page</button> : null}
          </nav>
        </>
      ) : null}
    </section>
  );
}

function Filters(p: { status: string; sessionId: string; executionId: string }) {
  const [sid, setSid] = useState(p.sessionId);
  const [eid, setEid] = useState(p.executionId);
  return (
    <form class="toolbar filters" aria-label="Filter the inputs"
      onSubmit={(e) => {
        e.preventDefault();
        setQuery({ sessionId: sid.trim() || undefined, executionId: eid.trim() || undefined, cursor: undefined });
      }}>
      <label for="f-status">Status</label>
      <select id="f-status" value={p.status} onChange={(e) => setQuery({ status: (e.target as HTMLSelectElement).value === "all" ? "all" : undefined, cursor: undefined })}>
        <option value="open">open</option>
        <option value="all">all (answered and cancelled too)</option>
      </select>
      <label for="f-session">Session</label>
      <input id="f-session" value={sid} placeholder="every session" onInput={(e) => setSid((e.target as HTMLInputElement).value)} />
      <label for="f-execution">Run</label>
      <input id="f-execution" value={eid} placeholder="every run (needs a session)" size={38} onInput={(e) => setEid((e.target as HTMLInputElement).value)} />
      <button type="submit">Filter</button>
    </form>
  );
}

function InputCard({ input }: { input: Input }) {
  const [answered, setAnswered] = useState<Input>();
  const i = answered ?? input;
  const run = `/sessions/${encodeURIComponent(i.sessionId)}/executions/${encodeURIComponent(i.executionId)}`;
  return (
    <li class="panel input-card" data-input={i.inputId} aria-labelledby={`prompt-${i.inputId}`}>
      <div class="row">
        <Status status={i.status} />
        <h2 id={`prompt-${i.inputId}`} class="prompt">{i.prompt}</h2>
      </div>
      <p class="muted small">
        <a href={run}>{i.sessionId} / run {i.executionId.slice(0, 8)}</a> · node <code>{i.nodeId}</code> · asked <Time at={i.createdAt} />
        {" "}· input <code>{i.inputId}</code>
      </p>
      {i.status === "answered" ? (
        <div class="answer" data-testid="answered">
          Answered by <strong>{i.answeredBy}</strong> at <Time at={i.answeredAt} />:
          <JsonView value={i.answer} label="The answer" />
        </div>
      ) : null}
      {i.status === "open" && can("OPERATOR") ? <AnswerForm input={i} onAnswered={setAnswered} /> : null}
      {i.status === "open" && i.schema ? (
        <details>
          <summary>The schema the answer must satisfy</summary>
          <JsonView value={i.schema} label="The input's schema" />
        </details>
      ) : null}
    </li>
  );
}

const idOf = (inputId: string) => "a" + inputId.replace(/[^A-Za-z0-9]/g, "");

function AnswerForm({ input, onAnswered }: { input: Input; onAnswered: (i: Input) => void }) {
  const schema = input.schema as Schema | undefined;
  const formable = !!schema && drawable(schema);
  const [value, setValue] = useState<unknown>(() => (schema && formable ? initialValue(schema) : undefined));
  const [text, setText] = useState(schema && !formable ? "{}" : "");
  const [comment, setComment] = useState("");
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [refused, setRefused] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Error>();
  const id = idOf(input.inputId);

  const send = async (answer: unknown) => {
    setBusy(true);
    setProblem(undefined);
    try {
      onAnswered(await ok(api.POST("/api/inputs/{inputId}", { params: { path: { inputId: input.inputId } }, body: { answer } })));
    } catch (e) {
      setProblem(e as Error);
      // The server names each value at fault under "answer": show it by its field too.
      if (e instanceof ApiError && e.status === 400 && e.problem?.errors?.length) {
        setRefused(false);
        setErrors(e.problem.errors.filter((v) => v.path?.startsWith("answer")).map((v) => ({
          path: (v.path ?? "").replace(/^answer\.?/, ""),
          message: v.message.replace(/^does not match the input's schema: /, "the server says: "),
        })));
      }
    } finally {
      setBusy(false);
    }
  };
  /** submit checks in the browser first; unchecked sends as is and lets the server judge. */
  const submit = (unchecked: boolean) => {
    let answer: unknown = value;
    if (!schema || !formable) {
      const r = parseJson(text);
      if (r.error) {
        setErrors([{ path: "", message: "is not JSON: " + r.error }]);
        setRefused(true);
        return;
      }
      answer = r.value;
    }
    const errs = schema && !unchecked ? checkValue(schema, answer) : [];
    setErrors(errs);
    setRefused(errs.length > 0);
    if (errs.length === 0) void send(answer);
  };

  if (!schema) {
    // No schema: an approval ({"approved": …, "comment": …}) or any object.
    return (
      <div class="answer-form" data-testid="answer-form">
        <label for={id + "-comment"}>Comment</label>
        <input id={id + "-comment"} value={comment} onInput={(e) => setComment((e.target as HTMLInputElement).value)} />
        <div class="toolbar">
          <button type="button" class="primary" disabled={busy} data-testid="approve-input" onClick={() => send({ approved: true, comment })}>Approve</button>
          <button type="button" class="danger" disabled={busy} data-testid="reject-input" onClick={() => send({ approved: false, comment })}>Reject</button>
        </div>
        <details>
          <summary>Answer with JSON instead</summary>
          <JsonEditor id={id + "-json"} label="Answer (JSON)" value={text} onChange={setText} rows={4} />
          <button type="button" disabled={busy} onClick={() => submit(false)}>Send answer</button>
        </details>
        <div aria-live="polite"><ProblemView error={problem} /></div>
      </div>
    );
  }
  return (
    <form class="answer-form" data-testid="answer-form" aria-label={`Answer: ${input.prompt}`} noValidate
      onSubmit={(e) => {
        e.preventDefault();
        submit(false);
      }}>
      {formable ? (
        <SchemaForm schema={schema} value={value} onChange={setValue} id={id} errors={errors} label="Answer" />
      ) : (
        <JsonEditor id={id + "-json"} label="Answer (JSON; the form cannot draw this schema)" value={text} onChange={setText} rows={6} />
      )}
      <div class="toolbar">
        <button type="submit" class="primary" disabled={busy} data-testid="send-answer">Send answer</button>
        {refused ? (
          <button type="button" disabled={busy} data-testid="send-unchecked" title="Send the answer as it is and let the server check it"
            onClick={() => submit(true)}>Send unchecked</button>
        ) : null}
      </div>
      <div aria-live="polite">
        {refused && errors.length ? (
          <div class="problem" role="alert" data-testid="form-errors">
            <strong>Not sent: the answer does not match the schema</strong>
            <ul>
              {errors.map((e, k) => (
                <li key={k}>{e.path ? <code>{e.path}</code> : null} {e.message}</li>
              ))}
            </ul>
          </div>
        ) : null}
        <ProblemView error={problem} />
      </div>
    </form>
  );
}

export const inputs: Page = { path: "/inputs", title: "Inputs", nav: "Inputs", component: Inputs };
