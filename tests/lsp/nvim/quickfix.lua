-- Drive Neovim (0.7+) as a user would: start fullgraph's language server,
-- open a file, wait for its diagnostics, apply the quick fix for FG101 and
-- wait for that diagnostic to go away.  Everything observed is written as
-- JSON to $FULLGRAPH_RESULT for tests/lsp/test_lsp_neovim.py to check.
--
-- Run: nvim --headless -u NONE -c "luafile quickfix.lua"

local python = os.getenv("FULLGRAPH_PYTHON")
local root = os.getenv("FULLGRAPH_ROOT")
local file = os.getenv("FULLGRAPH_FILE")
local result_path = os.getenv("FULLGRAPH_RESULT")
local result = { events = {} }

local function note(event)
  table.insert(result.events, event)
end

local function write_result()
  local handle = assert(io.open(result_path, "w"))
  handle:write(vim.fn.json_encode(result))
  handle:close()
end

-- Diagnostics carry the LSP code in different fields across Neovim versions.
local function codes()
  local found = {}
  for _, diagnostic in ipairs(vim.diagnostic.get(0)) do
    local code = diagnostic.code
    if code == nil and diagnostic.user_data and diagnostic.user_data.lsp then
      code = diagnostic.user_data.lsp.code
    end
    table.insert(found, { code = code, line = diagnostic.lnum, col = diagnostic.col, message = diagnostic.message })
  end
  return found
end

local function has_code(code)
  for _, diagnostic in ipairs(codes()) do
    if diagnostic.code == code then
      return diagnostic
    end
  end
  return nil
end

local function run()
  local client_id = vim.lsp.start_client({
    name = "fullgraph",
    cmd = { python, "-m", "fullgraph.lsp_server" },
    root_dir = root,
    init_options = { debounceMs = 50, runOnSave = false },
  })
  assert(client_id, "vim.lsp.start_client returned nil")
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  vim.lsp.buf_attach_client(0, client_id)

  assert(vim.wait(60000, function() return has_code("FG101") ~= nil end, 100), "no FG101 diagnostic arrived")
  result.before = codes()
  local client = vim.lsp.get_client_by_id(client_id)
  result.encoding = client.offset_encoding
  local target = has_code("FG101")

  local params = {
    textDocument = vim.lsp.util.make_text_document_params(),
    range = {
      start = { line = target.line, character = target.col },
      ["end"] = { line = target.line, character = target.col },
    },
    context = { diagnostics = {}, only = { "quickfix" } },
  }
  local responses = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 20000)
  local chosen = nil
  for _, response in pairs(responses or {}) do
    for _, action in ipairs(response.result or {}) do
      if action.edit and action.title:find("FG101", 1, true) then
        chosen = action
      end
    end
  end
  assert(chosen, "the server offered no FG101 quick fix")
  result.action = chosen.title
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  note("applied")

  assert(vim.wait(60000, function() return has_code("FG101") == nil and #codes() > 0 end, 100),
    "the FG101 diagnostic stayed after the fix")
  result.after = codes()
  result.text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.lsp.stop_client(client_id)
  result.ok = true
end

local ok, problem = pcall(run)
if not ok then
  result.ok = false
  result.error = tostring(problem)
  result.diagnostics = codes()
end
write_result()
vim.cmd(ok and "qall!" or "cquit 1")
