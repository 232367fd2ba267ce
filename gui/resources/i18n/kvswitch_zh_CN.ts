<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>DetectDialog</name>
    <message>
        <source>Client</source>
        <translation>客户端</translation>
    </message>
    <message>
        <source>Settings file</source>
        <translation>配置文件</translation>
    </message>
    <message>
        <source>Program</source>
        <translation>程序</translation>
    </message>
    <message>
        <source>&amp;Make a profile from a client</source>
        <translation>从客户端生成配置方案(&amp;M)</translation>
    </message>
    <message>
        <source>{path} (not there yet)</source>
        <translation>{path}（尚不存在）</translation>
    </message>
    <message>
        <source>not on PATH</source>
        <translation>不在 PATH 中</translation>
    </message>
    <message>
        <source>registered as {name}</source>
        <translation>已注册为 {name}</translation>
    </message>
    <message>
        <source>registered</source>
        <translation>已注册</translation>
    </message>
    <message>
        <source>register</source>
        <translation>注册</translation>
    </message>
    <message>
        <source>not found</source>
        <translation>未找到</translation>
    </message>
    <message>
        <source>kvswitch — Detect clients</source>
        <translation>kvswitch — 检测客户端</translation>
    </message>
    <message>
        <source>Clients installed here (their settings file where the client keeps it, their program on PATH). Registered clients follow every switch; their files are written at the next switch, never now.</source>
        <translation>本机安装的客户端（客户端存放配置文件的位置，以及 PATH 中的程序）。已注册的客户端会跟随每次切换；它们的配置文件在下次切换时写入，此刻不会写入。</translation>
    </message>
    <message>
        <source>looking for clients…</source>
        <translation>正在查找客户端…</translation>
    </message>
    <message>
        <source>&amp;Close</source>
        <translation>关闭(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Register selected</source>
        <translation>注册选中项(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Look again</source>
        <translation>重新查找(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Store the key it holds in the keyring</source>
        <translation>将其中的密钥存入系统密钥环(&amp;S)</translation>
    </message>
    <message>
        <source>off: the profile sends no key until you store one (API key…); the key is never shown</source>
        <translation>关闭：在你保存密钥之前，配置方案不发送密钥（API 密钥…）；密钥从不显示</translation>
    </message>
    <message>
        <source>uses {endpoint} · model {model}</source>
        <translation>使用 {endpoint} · 模型 {model}</translation>
    </message>
    <message>
        <source>uses {endpoint}</source>
        <translation>使用 {endpoint}</translation>
    </message>
    <message>
        <source>cannot read it: {problem}</source>
        <translation>无法读取：{problem}</translation>
    </message>
    <message>
        <source>No clients found (looked for: {clients}). Install one, or register a file with kvswitch client add.</source>
        <translation>未找到客户端（查找了：{clients}）。请安装一个，或用 kvswitch client add 注册一个配置文件。</translation>
    </message>
    <message>
        <source>Check the ones kvswitch should keep in step, then Register selected.</source>
        <translation>勾选需要 kvswitch 保持同步的客户端，然后点击“注册选中项”。</translation>
    </message>
    <message>
        <source>Every client found is registered.</source>
        <translation>找到的客户端都已注册。</translation>
    </message>
    <message>
        <source>To make a profile from a client&apos;s settings, select it, then Make a profile.</source>
        <translation>要从客户端的配置生成配置方案，请选中它，然后点击“生成配置方案”。</translation>
    </message>
    <message>
        <source>Registered {clients}.</source>
        <translation>已注册 {clients}。</translation>
    </message>
    <message>
        <source>Cannot look for clients: {problem}</source>
        <translation>无法查找客户端：{problem}</translation>
    </message>
    <message>
        <source>&amp;Make a profile from {client}</source>
        <translation>从 {client} 生成配置方案(&amp;M)</translation>
    </message>
    <message>
        <source>a profile from what {path} holds now: its endpoint {endpoint}, model {model}; the file itself is not changed</source>
        <translation>用 {path} 当前的内容生成配置方案：端点 {endpoint}，模型 {model}；文件本身不会被修改</translation>
    </message>
    <message>
        <source>a profile from what {path} holds now: its endpoint {endpoint}; the file itself is not changed</source>
        <translation>用 {path} 当前的内容生成配置方案：端点 {endpoint}；文件本身不会被修改</translation>
    </message>
    <message>
        <source>select a client whose settings file names an endpoint of its own</source>
        <translation>请选择一个配置文件中有自己端点的客户端</translation>
    </message>
    <message>
        <source>registering {clients}…</source>
        <translation>正在注册 {clients}…</translation>
    </message>
    <message>
        <source>making a profile from {client}&apos;s settings…</source>
        <translation>正在从 {client} 的配置生成配置方案…</translation>
    </message>
    <message>
        <source>Made profile {name} from {client}&apos;s settings ({model} at {url}).</source>
        <translation>已从 {client} 的配置生成配置方案 {name}（{model}，位于 {url}）。</translation>
    </message>
    <message>
        <source>It is the active profile now.</source>
        <translation>它现在是当前配置方案。</translation>
    </message>
    <message>
        <source>Render it into your clients with Profile ▸ {name}.</source>
        <translation>用 配置方案 ▸ {name} 把它写入你的客户端。</translation>
    </message>
    <message>
        <source>No profile made from {client}: {problem}</source>
        <translation>未能从 {client} 生成配置方案：{problem}</translation>
    </message>
    <message>
        <source>Nothing registered: {problem}</source>
        <translation>未注册任何客户端：{problem}</translation>
    </message>
</context>
<context>
    <name>KeyDialog</name>
    <message>
        <source>kvswitch — API key</source>
        <translation>kvswitch — API 密钥</translation>
    </message>
    <message>
        <source>reading the profile…</source>
        <translation>正在读取配置方案…</translation>
    </message>
    <message>
        <source>paste the API key</source>
        <translation>粘贴 API 密钥</translation>
    </message>
    <message>
        <source>&amp;Write it into the clients now (files outside git repositories only)</source>
        <translation>立即写入客户端(&amp;W)（仅限 git 仓库之外的文件）</translation>
    </message>
    <message>
        <source>&amp;Save</source>
        <translation>保存(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Close</source>
        <translation>关闭(&amp;C)</translation>
    </message>
    <message>
        <source>Stored key</source>
        <translation>已保存的密钥</translation>
    </message>
    <message>
        <source>&amp;New key</source>
        <translation>新密钥(&amp;N)</translation>
    </message>
    <message>
        <source>API key of profile {name}</source>
        <translation>配置方案 {name} 的 API 密钥</translation>
    </message>
    <message>
        <source>Kept in the OS keyring; written only into the client files that need it.</source>
        <translation>保存在系统密钥环中；只写入需要它的客户端配置文件。</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>Profile {name} reads its key from {reference}, not the keyring; set that variable instead, or point the profile at the keyring: kvswitch profile edit {name} --key keyring</source>
        <translation>配置方案 {name} 从 {reference} 读取密钥，而不是系统密钥环；请改为设置该变量，或让配置方案使用系统密钥环：kvswitch profile edit {name} --key keyring</translation>
    </message>
    <message>
        <source>Cannot read the profile</source>
        <translation>无法读取配置方案</translation>
    </message>
    <message>
        <source>Storing…</source>
        <translation>正在保存…</translation>
    </message>
    <message>
        <source>Stored {masked} in the OS keyring. Writing it into the clients…</source>
        <translation>已将 {masked} 存入系统密钥环。正在写入客户端…</translation>
    </message>
    <message>
        <source>Stored {masked} in the OS keyring.</source>
        <translation>已将 {masked} 存入系统密钥环。</translation>
    </message>
    <message>
        <source>Not stored: {problem}</source>
        <translation>未保存：{problem}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>loading…</source>
        <translation>正在加载…</translation>
    </message>
    <message>
        <source>&amp;Merged</source>
        <translation>合并模式（merged）(&amp;M)</translation>
    </message>
    <message>
        <source>S&amp;plit</source>
        <translation>分离模式（split）(&amp;P)</translation>
    </message>
    <message>
        <source>chunked prefill and continuous batching on one instance</source>
        <translation>在一个实例上进行分块预填充和连续批处理</translation>
    </message>
    <message>
        <source>prefill/decode disaggregation</source>
        <translation>预填充/解码分离</translation>
    </message>
    <message>
        <source>Mode</source>
        <translation>模式</translation>
    </message>
    <message>
        <source>Pro&amp;file</source>
        <translation>配置方案(&amp;F)</translation>
    </message>
    <message>
        <source>Client</source>
        <translation>客户端</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>&amp;Open file</source>
        <translation>打开文件(&amp;O)</translation>
    </message>
    <message>
        <source>Open fol&amp;der</source>
        <translation>打开文件夹(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;Restore a backup</source>
        <translation>恢复备份(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;This client alone</source>
        <translation>仅此客户端(&amp;T)</translation>
    </message>
    <message>
        <source>switch the selected client alone, or put it back in every client&apos;s mode</source>
        <translation>单独切换选中的客户端，或让它回到全部客户端的模式</translation>
    </message>
    <message>
        <source>D&amp;etect clients…</source>
        <translation>检测客户端(&amp;E)…</translation>
    </message>
    <message>
        <source>Clients</source>
        <translation>客户端</translation>
    </message>
    <message>
        <source>Gateway: off</source>
        <translation>网关：已关闭</translation>
    </message>
    <message>
        <source>Start &amp;gateway</source>
        <translation>启动网关(&amp;G)</translation>
    </message>
    <message>
        <source>kvswitch&apos;s local gateway for the clients pinned to it: start it in the background (it keeps running when kvswitch-tray quits) or stop it</source>
        <translation>供固定到它的客户端使用的 kvswitch 本地网关：在后台启动（kvswitch-tray 退出后它仍继续运行）或停止它</translation>
    </message>
    <message>
        <source>Run pro&amp;be…</source>
        <translation>运行探测(&amp;B)…</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>设置(&amp;S)…</translation>
    </message>
    <message>
        <source>API &amp;key…</source>
        <translation>API 密钥(&amp;K)…</translation>
    </message>
    <message>
        <source>Open &amp;log</source>
        <translation>打开日志(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Watch files</source>
        <translation>监视文件(&amp;W)</translation>
    </message>
    <message>
        <source>keep the clients in step when a file is edited by hand</source>
        <translation>手动编辑文件时让客户端保持同步</translation>
    </message>
    <message>
        <source>La&amp;unch at login</source>
        <translation>登录时启动(&amp;U)</translation>
    </message>
    <message>
        <source>start kvswitch-tray when you log in to this desktop</source>
        <translation>登录此桌面时启动 kvswitch-tray</translation>
    </message>
    <message>
        <source>La&amp;nguage</source>
        <translation>语言(&amp;N)</translation>
    </message>
    <message>
        <source>the language of kvswitch-tray (applies at the next start)</source>
        <translation>kvswitch-tray 的语言（下次启动时生效）</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
</context>
<context>
    <name>ProbeWindow</name>
    <message>
        <source>mode</source>
        <translation>模式</translation>
    </message>
    <message>
        <source>ok / sent</source>
        <translation>成功 / 发送</translation>
    </message>
    <message>
        <source>GPU peak Δ</source>
        <translation>GPU 峰值 Δ</translation>
    </message>
    <message>
        <source>how the mode was selected, and where its requests went</source>
        <translation>模式的选择方式，以及请求发往何处</translation>
    </message>
    <message>
        <source>successful requests / measured requests</source>
        <translation>成功的请求 / 测量的请求</translation>
    </message>
    <message>
        <source>median time to the first token-bearing delta</source>
        <translation>收到第一个携带 token 的增量的时间中位数</translation>
    </message>
    <message>
        <source>90th percentile TTFT</source>
        <translation>首 token 延迟（TTFT）第 90 百分位</translation>
    </message>
    <message>
        <source>99th percentile TTFT (the maximum below 100 samples)</source>
        <translation>首 token 延迟（TTFT）第 99 百分位（样本少于 100 个时即最大值）</translation>
    </message>
    <message>
        <source>median time to the first response byte (diagnostic)</source>
        <translation>收到响应第一个字节的时间中位数（诊断用）</translation>
    </message>
    <message>
        <source>99th percentile gap between tokens</source>
        <translation>token 间隔的第 99 百分位</translation>
    </message>
    <message>
        <source>median time per output token after the first</source>
        <translation>第一个 token 之后每个输出 token 的时间中位数</translation>
    </message>
    <message>
        <source>99th percentile ITL of the background decode streams</source>
        <translation>后台解码流的 token 间延迟（ITL）第 99 百分位</translation>
    </message>
    <message>
        <source>GPU memory: peak during the mode&apos;s own batches minus the baseline before the probe</source>
        <translation>GPU 显存：该模式自身批次中的峰值减去探测前的基线</translation>
    </message>
    <message>
        <source>unavailable: {problem}</source>
        <translation>不可用：{problem}</translation>
    </message>
    <message>
        <source>split is faster</source>
        <translation>split 更快</translation>
    </message>
    <message>
        <source>merged is faster</source>
        <translation>merged 更快</translation>
    </message>
    <message>
        <source>no difference the interval can show</source>
        <translation>区间显示不出差异</translation>
    </message>
    <message>
        <source>TTFT median split/merged = {ratio} (95 % bootstrap interval {low}–{high}): {verdict} to the first token.</source>
        <translation>首 token 延迟（TTFT）中位数 split/merged = {ratio}（95 % bootstrap 区间 {low}–{high}）：就首 token 而言，{verdict}。</translation>
    </message>
    <message>
        <source>ITL p99 split/merged = {ratio} (95 % interval {low}–{high}): {verdict} between tokens.</source>
        <translation>token 间延迟（ITL）p99 split/merged = {ratio}（95 % 区间 {low}–{high}）：就 token 间隔而言，{verdict}。</translation>
    </message>
    <message>
        <source>No comparison: it needs both modes with successful requests (this run: {modes}).</source>
        <translation>无法比较：需要两种模式都有成功的请求（本次运行：{modes}）。</translation>
    </message>
    <message>
        <source>No comparison: it needs both modes with successful requests.</source>
        <translation>无法比较：需要两种模式都有成功的请求。</translation>
    </message>
    <message>
        <source>n/a: no GPU memory figures</source>
        <translation>不可用：没有 GPU 显存数据</translation>
    </message>
    <message>
        <source>{gpu} ({instance}): baseline {baseline} MiB, peak {peak} MiB, Δ {delta} MiB</source>
        <translation>{gpu}（{instance}）：基线 {baseline} MiB，峰值 {peak} MiB，Δ {delta} MiB</translation>
    </message>
    <message>
        <source>{label} (cancelled)</source>
        <translation>{label}（已取消）</translation>
    </message>
    <message>
        <source>kvswitch · probe</source>
        <translation>kvswitch · 探测</translation>
    </message>
    <message>
        <source>What to measure</source>
        <translation>测量内容</translation>
    </message>
    <message>
        <source>&amp;Active profile</source>
        <translation>当前配置方案(&amp;A)</translation>
    </message>
    <message>
        <source>reading the config…</source>
        <translation>正在读取配置…</translation>
    </message>
    <message>
        <source>&amp;Base URL</source>
        <translation>基础 URL(&amp;B)</translation>
    </message>
    <message>
        <source>model id</source>
        <translation>模型 ID</translation>
    </message>
    <message>
        <source>optional: variable holding the key</source>
        <translation>可选：保存密钥的环境变量</translation>
    </message>
    <message>
        <source>&amp;Model</source>
        <translation>模型(&amp;M)</translation>
    </message>
    <message>
        <source>&amp;Key from $</source>
        <translation>密钥环境变量 $(&amp;K)</translation>
    </message>
    <message>
        <source>Modes</source>
        <translation>模式</translation>
    </message>
    <message>
        <source>measured batches per mode (p99 of 20 samples is the maximum)</source>
        <translation>每种模式测量的批次数（20 个样本的 p99 即最大值）</translation>
    </message>
    <message>
        <source>warm-up requests per mode, not measured</source>
        <translation>每种模式的预热请求数，不计入测量</translation>
    </message>
    <message>
        <source>prompt length in words ≈ tokens</source>
        <translation>提示词长度（单词数 ≈ token 数）</translation>
    </message>
    <message>
        <source>Chinese sample &amp;prompt</source>
        <translation>中文示例提示词(&amp;P)</translation>
    </message>
    <message>
        <source>a fixed Chinese question about the KV cache, repeated 8 times, instead of N words</source>
        <translation>一段固定的中文 KV 缓存问题，重复 8 次，代替 N 个单词</translation>
    </message>
    <message>
        <source>output tokens per request (small, so decode does not hide TTFT)</source>
        <translation>每个请求的输出 token 数（取小值，避免解码掩盖首 token 延迟）</translation>
    </message>
    <message>
        <source>&amp;Nonce first</source>
        <translation>前置随机串(&amp;N)</translation>
    </message>
    <message>
        <source>a unique nonce at the start of every prompt, so the prefix cache cannot serve it; off: the same prompt every time</source>
        <translation>在每个提示词开头加一个唯一的随机串，使前缀缓存无法命中；关闭：每次使用相同的提示词</translation>
    </message>
    <message>
        <source>requests per batch, sent together</source>
        <translation>每批同时发送的请求数</translation>
    </message>
    <message>
        <source>long generations kept running while TTFT is sampled (decode load)</source>
        <translation>采样首 token 延迟期间保持运行的长生成请求（解码负载）</translation>
    </message>
    <message>
        <source>R&amp;uns</source>
        <translation>轮数(&amp;U)</translation>
    </message>
    <message>
        <source>&amp;Warm-up</source>
        <translation>预热(&amp;W)</translation>
    </message>
    <message>
        <source>Prompt &amp;tokens</source>
        <translation>提示词 token 数(&amp;T)</translation>
    </message>
    <message>
        <source>Ma&amp;x tokens</source>
        <translation>最大 token 数(&amp;X)</translation>
    </message>
    <message>
        <source>Cache busting</source>
        <translation>绕过缓存</translation>
    </message>
    <message>
        <source>C&amp;oncurrency</source>
        <translation>并发数(&amp;O)</translation>
    </message>
    <message>
        <source>Backgroun&amp;d streams</source>
        <translation>后台流(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;Run</source>
        <translation>运行(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Cancel</source>
        <translation>取消(&amp;C)</translation>
    </message>
    <message>
        <source>%v / %m requests</source>
        <translation>%v / %m 个请求</translation>
    </message>
    <message>
        <source>Ready.</source>
        <translation>就绪。</translation>
    </message>
    <message>
        <source>History</source>
        <translation>历史</translation>
    </message>
    <message>
        <source>No results yet: choose what to measure and press Run.</source>
        <translation>尚无结果：选择要测量的内容，然后点击“运行”。</translation>
    </message>
    <message>
        <source>Export &amp;JSON…</source>
        <translation>导出 JSON(&amp;J)…</translation>
    </message>
    <message>
        <source>Choose at least one mode.</source>
        <translation>请至少选择一种模式。</translation>
    </message>
    <message>
        <source>Enter a base URL such as http://127.0.0.1:8000/v1.</source>
        <translation>请输入基础 URL，例如 http://127.0.0.1:8000/v1。</translation>
    </message>
    <message>
        <source>Enter the model id the server serves.</source>
        <translation>请输入服务器提供的模型 ID。</translation>
    </message>
    <message>
        <source>Preparing: reading the profile…</source>
        <translation>准备中：正在读取配置方案…</translation>
    </message>
    <message>
        <source>Cancelled before the probe started.</source>
        <translation>探测开始前已取消。</translation>
    </message>
    <message>
        <source>{requests} requests, up to {tokens} tokens, to {hosts}</source>
        <translation>{requests} 个请求，最多 {tokens} 个 token，发往 {hosts}</translation>
    </message>
    <message>
        <source>Spend tokens?</source>
        <translation>要消耗 token 吗？</translation>
    </message>
    <message>
        <source>This probe sends {spend}. Go ahead?</source>
        <translation>本次探测将发送 {spend}。继续吗？</translation>
    </message>
    <message>
        <source>Probe not run.</source>
        <translation>探测未运行。</translation>
    </message>
    <message>
        <source>Running…</source>
        <translation>运行中…</translation>
    </message>
    <message>
        <source>Cancelling after the requests in flight…</source>
        <translation>正在等进行中的请求完成后取消…</translation>
    </message>
    <message>
        <source>Running: {mode} · {done} of {total} requests</source>
        <translation>运行中：{mode} · 第 {done} / {total} 个请求</translation>
    </message>
    <message>
        <source>Cancelled: {count} measured requests before stopping ({seconds} s).</source>
        <translation>已取消：停止前测量了 {count} 个请求（{seconds} 秒）。</translation>
    </message>
    <message>
        <source>Done: {count} measured requests in {seconds} s, {failed} failed.</source>
        <translation>完成：{seconds} 秒内测量了 {count} 个请求，{failed} 个失败。</translation>
    </message>
    <message>
        <source>Done: {count} measured requests in {seconds} s.</source>
        <translation>完成：{seconds} 秒内测量了 {count} 个请求。</translation>
    </message>
    <message>
        <source>Not saved to the history: {problem}</source>
        <translation>未保存到历史：{problem}</translation>
    </message>
    <message>
        <source>Probe failed: {problem}</source>
        <translation>探测失败：{problem}</translation>
    </message>
    <message>
        <source>Export the probe report</source>
        <translation>导出探测报告</translation>
    </message>
    <message>
        <source>JSON files (*.json);;All files (*)</source>
        <translation>JSON 文件 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Exporting to {path}…</source>
        <translation>正在导出到 {path}…</translation>
    </message>
    <message>
        <source>Exported to {path}.</source>
        <translation>已导出到 {path}。</translation>
    </message>
    <message>
        <source>Export failed: {problem}</source>
        <translation>导出失败：{problem}</translation>
    </message>
    <message>
        <source>{model} @ {url} · {runs} runs × {concurrency} per mode (+{warmup} warm-up) · prompt {prompt} · max_tokens {max_tokens}</source>
        <translation>{model} @ {url} · 每种模式 {runs} 轮 × {concurrency}（另加 {warmup} 次预热）· 提示词 {prompt} · max_tokens {max_tokens}</translation>
    </message>
    <message>
        <source>cache busting on</source>
        <translation>绕过缓存：开</translation>
    </message>
    <message>
        <source>cache busting off</source>
        <translation>绕过缓存：关</translation>
    </message>
    <message>
        <source>{count} background stream(s)</source>
        <translation>{count} 个后台流</translation>
    </message>
    <message>
        <source>CANCELLED — partial results.</source>
        <translation>已取消 — 部分结果。</translation>
    </message>
    <message>
        <source>{count} failed: {cause}</source>
        <translation>{count} 个失败：{cause}</translation>
    </message>
    <message>
        <source>routed by {how} → {url}</source>
        <translation>路由方式 {how} → {url}</translation>
    </message>
    <message>
        <source>no failures</source>
        <translation>没有失败</translation>
    </message>
    <message>
        <source>first token-bearing delta</source>
        <translation>第一个携带 token 的增量</translation>
    </message>
    <message>
        <source>with few samples p99 is the maximum</source>
        <translation>样本较少时 p99 即最大值</translation>
    </message>
    <message>
        <source>first response byte (diagnostic)</source>
        <translation>响应的第一个字节（诊断用）</translation>
    </message>
    <message>
        <source>ITL of the background streams</source>
        <translation>后台流的 token 间延迟（ITL）</translation>
    </message>
    <message>
        <source>backend metrics {metrics}</source>
        <translation>后端指标 {metrics}</translation>
    </message>
    <message>
        <source>backend metrics during the mode&apos;s runs: {metrics}</source>
        <translation>该模式运行期间的后端指标：{metrics}</translation>
    </message>
    <message>
        <source>GPU memory {state}</source>
        <translation>GPU 显存 {state}</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <source>kvswitch — profile settings</source>
        <translation>kvswitch — 配置方案设置</translation>
    </message>
    <message>
        <source>reading kvswitch.toml…</source>
        <translation>正在读取 kvswitch.toml…</translation>
    </message>
    <message>
        <source> tokens</source>
        <translation> 个 token</translation>
    </message>
    <message>
        <source>Tokens per prefill chunk in merged mode: a multiple of 64; 512–1024 suits most 7B models</source>
        <translation>合并模式下每个预填充分块的 token 数：64 的倍数；512–1024 适合大多数 7B 模型</translation>
    </message>
    <message>
        <source>&amp;Reuse cached prefixes</source>
        <translation>复用已缓存的前缀(&amp;R)</translation>
    </message>
    <message>
        <source>default: the profile&apos;s base URL</source>
        <translation>默认：配置方案的基础 URL</translation>
    </message>
    <message>
        <source>KV layers transferred in parallel: 1–8, 4 is a stable start</source>
        <translation>并行传输的 KV 层数：1–8，从 4 开始比较稳妥</translation>
    </message>
    <message>
        <source>Stream &amp;answers (needed to see TTFT)</source>
        <translation>流式返回应答(&amp;A)（测量首 token 延迟需要）</translation>
    </message>
    <message>
        <source> s</source>
        <translation> 秒</translation>
    </message>
    <message>
        <source>Merged mode</source>
        <translation>合并模式（merged）</translation>
    </message>
    <message>
        <source>C&amp;hunk size</source>
        <translation>分块大小(&amp;H)</translation>
    </message>
    <message>
        <source>Both modes</source>
        <translation>两种模式</translation>
    </message>
    <message>
        <source>&amp;KV cache dtype</source>
        <translation>KV 缓存数据类型(&amp;K)</translation>
    </message>
    <message>
        <source>Prefix cache</source>
        <translation>前缀缓存</translation>
    </message>
    <message>
        <source>Split mode</source>
        <translation>分离模式（split）</translation>
    </message>
    <message>
        <source>Pre&amp;fill endpoint</source>
        <translation>预填充端点(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Decode endpoint</source>
        <translation>解码端点(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;Transfer protocol</source>
        <translation>传输协议(&amp;T)</translation>
    </message>
    <message>
        <source>Transfer co&amp;ncurrency</source>
        <translation>传输并发数(&amp;N)</translation>
    </message>
    <message>
        <source>Requests</source>
        <translation>请求</translation>
    </message>
    <message>
        <source>Te&amp;mperature</source>
        <translation>温度(&amp;M)</translation>
    </message>
    <message>
        <source>Ma&amp;x tokens</source>
        <translation>最大 token 数(&amp;X)</translation>
    </message>
    <message>
        <source>Stream</source>
        <translation>流式</translation>
    </message>
    <message>
        <source>T&amp;imeout</source>
        <translation>超时(&amp;I)</translation>
    </message>
    <message>
        <source>A&amp;pply to the clients after saving</source>
        <translation>保存后应用到客户端(&amp;P)</translation>
    </message>
    <message>
        <source>&amp;Save</source>
        <translation>保存(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Close</source>
        <translation>关闭(&amp;C)</translation>
    </message>
    <message>
        <source>Profile {name}</source>
        <translation>配置方案 {name}</translation>
    </message>
    <message>
        <source>The clients are in {mode} mode; the {other} settings take effect when you switch.</source>
        <translation>客户端当前为 {mode} 模式；{other} 模式的设置在切换后生效。</translation>
    </message>
    <message>
        <source>Cannot edit the profile: {problem}</source>
        <translation>无法编辑配置方案：{problem}</translation>
    </message>
    <message>
        <source>1 error: fix it to save.</source>
        <translation>1 个错误：修正后才能保存。</translation>
    </message>
    <message>
        <source>{count} errors: fix them to save.</source>
        <translation>{count} 个错误：修正后才能保存。</translation>
    </message>
    <message>
        <source>error</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>info</source>
        <translation>提示</translation>
    </message>
    <message>
        <source>{code} {severity}: {message}</source>
        <translation>{code} {severity}：{message}</translation>
    </message>
    <message>
        <source>Not saved: {code} {problem}</source>
        <translation>未保存：{code} {problem}</translation>
    </message>
    <message>
        <source>Saving…</source>
        <translation>正在保存…</translation>
    </message>
    <message>
        <source>Saved in {file}. Applying it to the clients…</source>
        <translation>已保存到 {file}。正在应用到客户端…</translation>
    </message>
    <message>
        <source>Saved in {file}.</source>
        <translation>已保存到 {file}。</translation>
    </message>
    <message>
        <source>Not saved: {problem}</source>
        <translation>未保存：{problem}</translation>
    </message>
</context>
<context>
    <name>TrayController</name>
    <message>
        <source>A client file is invalid</source>
        <translation>有客户端配置文件无效</translation>
    </message>
    <message>
        <source>The watcher hit a problem</source>
        <translation>监视器遇到问题</translation>
    </message>
    <message>
        <source>Took an outside edit</source>
        <translation>已采纳一处外部修改</translation>
    </message>
    <message>
        <source>Put an outside edit back</source>
        <translation>已撤销一处外部修改</translation>
    </message>
    <message>
        <source>Fixed a client file</source>
        <translation>已修复客户端配置文件</translation>
    </message>
    <message>
        <source>Clients updated</source>
        <translation>客户端已更新</translation>
    </message>
    <message>
        <source>A client drifted</source>
        <translation>有客户端偏离了配置</translation>
    </message>
    <message>
        <source>Restart to apply</source>
        <translation>重启后生效</translation>
    </message>
    <message>
        <source>Cannot look for clients</source>
        <translation>无法查找客户端</translation>
    </message>
    <message>
        <source>kvswitch is already running</source>
        <translation>kvswitch 已在运行</translation>
    </message>
    <message>
        <source>Its icon is in the system tray.</source>
        <translation>它的图标在系统托盘中。</translation>
    </message>
    <message>
        <source>cannot read kvswitch&apos;s state: {problem}</source>
        <translation>无法读取 kvswitch 的状态：{problem}</translation>
    </message>
    <message>
        <source>kvswitch — reading the clients…</source>
        <translation>kvswitch — 正在读取客户端…</translation>
    </message>
    <message>
        <source>kvswitch — no profile yet</source>
        <translation>kvswitch — 尚无配置方案</translation>
    </message>
    <message>
        <source>make one from a client&apos;s settings: Profile ▸ Make a profile from a client…</source>
        <translation>可从客户端的配置生成：配置方案 ▸ 从客户端生成配置方案…</translation>
    </message>
    <message>
        <source>no probe run yet</source>
        <translation>尚未运行过探测</translation>
    </message>
    <message>
        <source>last switch failed: {problem}</source>
        <translation>上次切换失败：{problem}</translation>
    </message>
    <message>
        <source>{state}: pinned clients reach nothing until it starts</source>
        <translation>{state}：在它启动之前，已固定的客户端无法访问任何服务</translation>
    </message>
    <message>
        <source>watching files</source>
        <translation>正在监视文件</translation>
    </message>
    <message>
        <source>not watching files</source>
        <translation>未在监视文件</translation>
    </message>
    <message>
        <source>no clients registered</source>
        <translation>没有已注册的客户端</translation>
    </message>
    <message>
        <source>1 client registered, waiting for a profile</source>
        <translation>已注册 1 个客户端，等待配置方案</translation>
    </message>
    <message>
        <source>{count} clients registered, waiting for a profile</source>
        <translation>已注册 {count} 个客户端，等待配置方案</translation>
    </message>
    <message>
        <source>1 client in sync</source>
        <translation>1 个客户端已同步</translation>
    </message>
    <message>
        <source>{count} clients in sync</source>
        <translation>{count} 个客户端已同步</translation>
    </message>
    <message>
        <source>kvswitch — reading…</source>
        <translation>kvswitch — 正在读取…</translation>
    </message>
    <message>
        <source>kvswitch — not ready</source>
        <translation>kvswitch — 未就绪</translation>
    </message>
    <message>
        <source>chunked prefill and continuous batching on one instance</source>
        <translation>在一个实例上进行分块预填充和连续批处理</translation>
    </message>
    <message>
        <source>prefill/decode disaggregation</source>
        <translation>预填充/解码分离</translation>
    </message>
    <message>
        <source>no profiles</source>
        <translation>没有配置方案</translation>
    </message>
    <message>
        <source>&amp;Make a profile from a client…</source>
        <translation>从客户端生成配置方案(&amp;M)…</translation>
    </message>
    <message>
        <source>a profile from the settings a client&apos;s file holds now (its endpoint and model; its key only if you ask)</source>
        <translation>用客户端配置文件当前的设置生成配置方案（端点和模型；密钥仅在你要求时导入）</translation>
    </message>
    <message>
        <source>&amp;Open file</source>
        <translation>打开文件(&amp;O)</translation>
    </message>
    <message>
        <source>Open fol&amp;der</source>
        <translation>打开文件夹(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;Restore a backup</source>
        <translation>恢复备份(&amp;R)</translation>
    </message>
    <message>
        <source>no backups yet</source>
        <translation>尚无备份</translation>
    </message>
    <message>
        <source>&amp;Detect clients…</source>
        <translation>检测客户端(&amp;D)…</translation>
    </message>
    <message>
        <source>find the clients installed here and choose which kvswitch keeps in step</source>
        <translation>查找本机安装的客户端，并选择由 kvswitch 保持同步的客户端</translation>
    </message>
    <message>
        <source>&amp;Gateway</source>
        <translation>网关(&amp;G)</translation>
    </message>
    <message>
        <source>&amp;Run probe…</source>
        <translation>运行探测(&amp;R)…</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>设置(&amp;S)…</translation>
    </message>
    <message>
        <source>&amp;API key…</source>
        <translation>API 密钥(&amp;A)…</translation>
    </message>
    <message>
        <source>&amp;Watch files</source>
        <translation>监视文件(&amp;W)</translation>
    </message>
    <message>
        <source>keep the clients in step when a file is edited by hand</source>
        <translation>手动编辑文件时让客户端保持同步</translation>
    </message>
    <message>
        <source>&amp;Open log</source>
        <translation>打开日志(&amp;O)</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>La&amp;unch at login</source>
        <translation>登录时启动(&amp;U)</translation>
    </message>
    <message>
        <source>start kvswitch-tray when you log in to this desktop</source>
        <translation>登录此桌面时启动 kvswitch-tray</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>Switch all to &amp;Merged</source>
        <translation>全部切换到合并模式（merged）(&amp;M)</translation>
    </message>
    <message>
        <source>Switch all to &amp;Split</source>
        <translation>全部切换到分离模式（split）(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Merged</source>
        <translation>合并模式（merged）(&amp;M)</translation>
    </message>
    <message>
        <source>&amp;Split</source>
        <translation>分离模式（split）(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;System default</source>
        <translation>跟随系统(&amp;S)</translation>
    </message>
    <message>
        <source>applies at the next start</source>
        <translation>下次启动时生效</translation>
    </message>
    <message>
        <source>changed outside kvswitch</source>
        <translation>在 kvswitch 之外被修改</translation>
    </message>
    <message>
        <source>the file differs from what kvswitch last wrote there: edited by hand or by its client</source>
        <translation>文件与 kvswitch 上次写入的内容不同：被手动或其客户端修改过</translation>
    </message>
    <message>
        <source>switch this client alone to {mode}; the others stay as they are</source>
        <translation>仅将此客户端切换到 {mode}；其他客户端保持不变</translation>
    </message>
    <message>
        <source>&amp;Follow all</source>
        <translation>跟随全部(&amp;F)</translation>
    </message>
    <message>
        <source>put it back in every client&apos;s mode; later switches of all clients include it again</source>
        <translation>让它回到全部客户端的模式；之后切换全部客户端时会再次包含它</translation>
    </message>
    <message>
        <source>via gateway: it chooses the mode (Mode ▸ switches all, or per request)</source>
        <translation>经由网关：由网关选择模式（模式 ▸ 切换全部，或按请求选择）</translation>
    </message>
    <message>
        <source>pinned to kvswitch&apos;s gateway: a switch of all clients tells the gateway, and a request picks its own mode with a /merged or /split path prefix or an X-Cache-Mode header (kvswitch gateway unpin gives it a mode of its own)</source>
        <translation>已固定到 kvswitch 的网关：切换全部客户端时会通知网关，单个请求可用 /merged 或 /split 路径前缀或 X-Cache-Mode 头选择自己的模式（kvswitch gateway unpin 让它恢复自己的模式）</translation>
    </message>
    <message>
        <source>Gateway: off</source>
        <translation>网关：已关闭</translation>
    </message>
    <message>
        <source>&amp;Start gateway</source>
        <translation>启动网关(&amp;S)</translation>
    </message>
    <message>
        <source>kvswitch&apos;s local gateway for the active profile, in the background (kvswitch gateway --detach): it keeps running when the tray quits</source>
        <translation>为当前配置方案在后台启动 kvswitch 的本地网关（kvswitch gateway --detach）：托盘退出后它仍继续运行</translation>
    </message>
    <message>
        <source>S&amp;top gateway</source>
        <translation>停止网关(&amp;T)</translation>
    </message>
    <message>
        <source>stop it (kvswitch gateway stop); streams in flight get up to 10 s to finish</source>
        <translation>停止它（kvswitch gateway stop）；进行中的流最多有 10 秒完成</translation>
    </message>
    <message>
        <source>{state} · its own mode</source>
        <translation>{state} · 自己的模式</translation>
    </message>
    <message>
        <source>the client</source>
        <translation>该客户端</translation>
    </message>
    <message>
        <source>&amp;Mode — {mode}</source>
        <translation>模式(&amp;M) — {mode}</translation>
    </message>
    <message>
        <source>&amp;Mode</source>
        <translation>模式(&amp;M)</translation>
    </message>
    <message>
        <source>&amp;Profile — none yet</source>
        <translation>配置方案(&amp;P) — 尚无</translation>
    </message>
    <message>
        <source>&amp;Profile — {name}</source>
        <translation>配置方案(&amp;P) — {name}</translation>
    </message>
    <message>
        <source>&amp;Profile</source>
        <translation>配置方案(&amp;P)</translation>
    </message>
    <message>
        <source>all in sync</source>
        <translation>全部已同步</translation>
    </message>
    <message>
        <source>1 needs attention</source>
        <translation>1 个需要处理</translation>
    </message>
    <message>
        <source>{count} need attention</source>
        <translation>{count} 个需要处理</translation>
    </message>
    <message>
        <source>no profile yet</source>
        <translation>尚无配置方案</translation>
    </message>
    <message>
        <source>&amp;Clients — {summary}</source>
        <translation>客户端(&amp;C) — {summary}</translation>
    </message>
    <message>
        <source>&amp;Clients</source>
        <translation>客户端(&amp;C)</translation>
    </message>
    <message>
        <source>make a profile first: Profile ▸ Make a profile from a client…</source>
        <translation>请先生成配置方案：配置方案 ▸ 从客户端生成配置方案…</translation>
    </message>
    <message>
        <source>&amp;Follow all ({mode})</source>
        <translation>跟随全部(&amp;F)（{mode}）</translation>
    </message>
    <message>
        <source>restart kvswitch-tray to apply</source>
        <translation>重启 kvswitch-tray 后生效</translation>
    </message>
    <message>
        <source>in use now: {language}</source>
        <translation>当前使用：{language}</translation>
    </message>
    <message>
        <source>the desktop&apos;s language ({language}), or KVSWITCH_LANG when it is set</source>
        <translation>桌面的语言（{language}），设置了 KVSWITCH_LANG 时以它为准</translation>
    </message>
    <message>
        <source>&amp;Gateway — starting…</source>
        <translation>网关(&amp;G) — 正在启动…</translation>
    </message>
    <message>
        <source>&amp;Gateway — stopping…</source>
        <translation>网关(&amp;G) — 正在停止…</translation>
    </message>
    <message>
        <source>Gateway: starting…</source>
        <translation>网关：正在启动…</translation>
    </message>
    <message>
        <source>Gateway: stopping…</source>
        <translation>网关：正在停止…</translation>
    </message>
    <message>
        <source>&amp;Gateway — on, {mode}</source>
        <translation>网关(&amp;G) — 运行中，{mode}</translation>
    </message>
    <message>
        <source>&amp;Gateway — off</source>
        <translation>网关(&amp;G) — 已关闭</translation>
    </message>
    <message>
        <source>&amp;Gateway — off (1 pinned client needs it)</source>
        <translation>网关(&amp;G) — 已关闭（1 个已固定的客户端需要它）</translation>
    </message>
    <message>
        <source>&amp;Gateway — off ({count} pinned clients need it)</source>
        <translation>网关(&amp;G) — 已关闭（{count} 个已固定的客户端需要它）</translation>
    </message>
    <message>
        <source>pinned: {clients}</source>
        <translation>已固定：{clients}</translation>
    </message>
    <message>
        <source>no client pinned (kvswitch gateway pin)</source>
        <translation>没有已固定的客户端（kvswitch gateway pin）</translation>
    </message>
    <message>
        <source>profile {name}</source>
        <translation>配置方案 {name}</translation>
    </message>
    <message>
        <source>upstreams given outright</source>
        <translation>直接指定的上游</translation>
    </message>
    <message>
        <source>{count} in flight</source>
        <translation>{count} 个进行中</translation>
    </message>
    <message>
        <source>requests that ask for no mode (no /merged, /split or /auto path, no X-Cache-Mode header) go where auto decides: by their new prompt tokens and the load</source>
        <translation>未指定模式的请求（没有 /merged、/split 或 /auto 路径，也没有 X-Cache-Mode 头）由 auto 决定去向：依据新的提示词 token 数和负载</translation>
    </message>
    <message>
        <source>requests that ask for no mode (no /merged, /split or /auto path, no X-Cache-Mode header) go to the gateway&apos;s mode</source>
        <translation>未指定模式的请求（没有 /merged、/split 或 /auto 路径，也没有 X-Cache-Mode 头）使用网关的模式</translation>
    </message>
    <message>
        <source>the gateway&apos;s TTFT (request in → first token out) over its latest answers</source>
        <translation>网关最近若干次应答的首 token 延迟（TTFT，从收到请求到发出第一个 token）</translation>
    </message>
    <message>
        <source>choose a client</source>
        <translation>请选择一个客户端</translation>
    </message>
    <message>
        <source>&amp;Merged (this client alone)</source>
        <translation>合并模式（merged，仅此客户端）(&amp;M)</translation>
    </message>
    <message>
        <source>&amp;Split (this client alone)</source>
        <translation>分离模式（split，仅此客户端）(&amp;S)</translation>
    </message>
    <message>
        <source>{state} · changed outside</source>
        <translation>{state} · 在外部被修改</translation>
    </message>
    <message>
        <source>Stop &amp;gateway</source>
        <translation>停止网关(&amp;G)</translation>
    </message>
    <message>
        <source>Start &amp;gateway</source>
        <translation>启动网关(&amp;G)</translation>
    </message>
    <message>
        <source>the switch to {mode}</source>
        <translation>切换到 {mode}</translation>
    </message>
    <message>
        <source>the change to profile {name}</source>
        <translation>切换到配置方案 {name}</translation>
    </message>
    <message>
        <source>Profile {name} not applied</source>
        <translation>配置方案 {name} 未应用</translation>
    </message>
    <message>
        <source>the switch of {client} to {mode}</source>
        <translation>{client} 切换到 {mode}</translation>
    </message>
    <message>
        <source>putting {client} back in step</source>
        <translation>让 {client} 恢复同步</translation>
    </message>
    <message>
        <source>Please wait</source>
        <translation>请稍候</translation>
    </message>
    <message>
        <source>{work} is still running; try again in a moment.</source>
        <translation>{work} 仍在进行；请稍后再试。</translation>
    </message>
    <message>
        <source>Switched to {mode}</source>
        <translation>已切换到 {mode}</translation>
    </message>
    <message>
        <source>Already {mode}</source>
        <translation>已经是 {mode}</translation>
    </message>
    <message>
        <source>{client} switched to {mode}</source>
        <translation>{client} 已切换到 {mode}</translation>
    </message>
    <message>
        <source>{client} already {mode}</source>
        <translation>{client} 已经是 {mode}</translation>
    </message>
    <message>
        <source>{client} follows all again ({mode})</source>
        <translation>{client} 重新跟随全部（{mode}）</translation>
    </message>
    <message>
        <source>Profile {name} applied</source>
        <translation>配置方案 {name} 已应用</translation>
    </message>
    <message>
        <source>updated</source>
        <translation>已更新</translation>
    </message>
    <message>
        <source>{change} (key written, file made 0600)</source>
        <translation>{change}（已写入密钥，文件权限设为 0600）</translation>
    </message>
    <message>
        <source>its file is already {mode}; nothing written to it</source>
        <translation>它的配置文件已经是 {mode}；未写入任何内容</translation>
    </message>
    <message>
        <source>every client already matches ({mode}); nothing written</source>
        <translation>所有客户端已经一致（{mode}）；未写入任何内容</translation>
    </message>
    <message>
        <source>no clients are registered (Clients ▸ Detect clients…)</source>
        <translation>没有已注册的客户端（客户端 ▸ 检测客户端…）</translation>
    </message>
    <message>
        <source>the other clients stay as they are; a switch of all clients includes {client} again</source>
        <translation>其他客户端保持不变；下次切换全部客户端时会再次包含 {client}</translation>
    </message>
    <message>
        <source>gateway: now {mode} for pinned clients and new requests</source>
        <translation>网关：已固定的客户端和新请求现在使用 {mode}</translation>
    </message>
    <message>
        <source>gateway: now serving profile {name} for new requests</source>
        <translation>网关：新请求现在使用配置方案 {name}</translation>
    </message>
    <message>
        <source>the running gateway did not take it: {problem}; its pinned clients stay as they were until the switch is made again</source>
        <translation>运行中的网关未接受：{problem}；在再次切换之前，固定到它的客户端保持原样</translation>
    </message>
    <message>
        <source>Switch to {mode} failed</source>
        <translation>切换到 {mode} 失败</translation>
    </message>
    <message>
        <source>Switch of {client} to {mode} failed</source>
        <translation>{client} 切换到 {mode} 失败</translation>
    </message>
    <message>
        <source>{client} not put back in step</source>
        <translation>{client} 未能恢复同步</translation>
    </message>
    <message>
        <source>starting the gateway</source>
        <translation>启动网关</translation>
    </message>
    <message>
        <source>stopping the gateway</source>
        <translation>停止网关</translation>
    </message>
    <message>
        <source>{url} · mode {mode} · profile {name} (pid {pid})</source>
        <translation>{url} · 模式 {mode} · 配置方案 {name}（pid {pid}）</translation>
    </message>
    <message>
        <source>pinned clients: {clients}</source>
        <translation>已固定的客户端：{clients}</translation>
    </message>
    <message>
        <source>no client is pinned to it yet (kvswitch gateway pin)</source>
        <translation>尚无客户端固定到它（kvswitch gateway pin）</translation>
    </message>
    <message>
        <source>it keeps running when the tray quits; Gateway ▸ Stop gateway stops it</source>
        <translation>托盘退出后它仍继续运行；用 网关 ▸ 停止网关 停止它</translation>
    </message>
    <message>
        <source>Gateway started</source>
        <translation>网关已启动</translation>
    </message>
    <message>
        <source>No client is pinned to it.</source>
        <translation>没有客户端固定到它。</translation>
    </message>
    <message>
        <source>{client} reaches nothing until it is started again (Gateway ▸ Start gateway).</source>
        <translation>在网关再次启动之前，{client} 无法访问任何服务（网关 ▸ 启动网关）。</translation>
    </message>
    <message>
        <source>{client} reach nothing until it is started again (Gateway ▸ Start gateway).</source>
        <translation>在网关再次启动之前，{client} 无法访问任何服务（网关 ▸ 启动网关）。</translation>
    </message>
    <message>
        <source>Gateway stopped</source>
        <translation>网关已停止</translation>
    </message>
    <message>
        <source>The gateway was not running</source>
        <translation>网关未在运行</translation>
    </message>
    <message>
        <source>nothing to stop.</source>
        <translation>无需停止。</translation>
    </message>
    <message>
        <source>Gateway not started</source>
        <translation>网关未启动</translation>
    </message>
    <message>
        <source>Gateway not stopped</source>
        <translation>网关未停止</translation>
    </message>
    <message>
        <source>Cannot open the file</source>
        <translation>无法打开文件</translation>
    </message>
    <message>
        <source>Cannot open the folder</source>
        <translation>无法打开文件夹</translation>
    </message>
    <message>
        <source>No log yet</source>
        <translation>尚无日志</translation>
    </message>
    <message>
        <source>The watcher writes its log ({path}) once it runs.</source>
        <translation>监视器运行后会写入日志（{path}）。</translation>
    </message>
    <message>
        <source>The watcher writes its log once it runs.</source>
        <translation>监视器运行后会写入日志。</translation>
    </message>
    <message>
        <source>Cannot open the log</source>
        <translation>无法打开日志</translation>
    </message>
    <message>
        <source>No application opened {path}.</source>
        <translation>没有应用程序打开 {path}。</translation>
    </message>
    <message>
        <source>backup {id} is back in place; the version it replaced is backup {kept}.</source>
        <translation>备份 {id} 已恢复；被替换的版本保存为备份 {kept}。</translation>
    </message>
    <message>
        <source>backup {id} is back in place.</source>
        <translation>备份 {id} 已恢复。</translation>
    </message>
    <message>
        <source>Restored {file}</source>
        <translation>已恢复 {file}</translation>
    </message>
    <message>
        <source>Cannot restore {file}</source>
        <translation>无法恢复 {file}</translation>
    </message>
    <message>
        <source>Not watching files</source>
        <translation>未在监视文件</translation>
    </message>
    <message>
        <source>{problem}. Stop that one (kvswitch watch) to watch from the tray.</source>
        <translation>{problem}。请先停止那个监视器（kvswitch watch），再从托盘监视。</translation>
    </message>
    <message>
        <source>Cannot watch files</source>
        <translation>无法监视文件</translation>
    </message>
    <message>
        <source>Watcher</source>
        <translation>监视器</translation>
    </message>
    <message>
        <source>The probe is not available</source>
        <translation>探测不可用</translation>
    </message>
    <message>
        <source>kvswitch_gui.probe_window cannot be loaded ({problem}); run kvswitch probe in a terminal instead.</source>
        <translation>无法加载 kvswitch_gui.probe_window（{problem}）；请改在终端中运行 kvswitch probe。</translation>
    </message>
    <message>
        <source>Probe finished</source>
        <translation>探测完成</translation>
    </message>
    <message>
        <source>the report has no timings</source>
        <translation>报告中没有计时数据</translation>
    </message>
    <message>
        <source>Clients found</source>
        <translation>发现客户端</translation>
    </message>
    <message>
        <source>1 client installed here is not kept in step yet: choose which in the window (later: Clients ▸ Detect clients…).</source>
        <translation>本机安装的 1 个客户端尚未保持同步：请在窗口中选择（之后也可用：客户端 ▸ 检测客户端…）。</translation>
    </message>
    <message>
        <source>{count} clients installed here are not kept in step yet: choose which in the window (later: Clients ▸ Detect clients…).</source>
        <translation>本机安装的 {count} 个客户端尚未保持同步：请在窗口中选择（之后也可用：客户端 ▸ 检测客户端…）。</translation>
    </message>
    <message>
        <source>Clients registered</source>
        <translation>客户端已注册</translation>
    </message>
    <message>
        <source>{clients}: kvswitch keeps them in step from now on (their files are written at the next switch). To make a profile from one&apos;s settings, select it in the Detect window, then Make a profile.</source>
        <translation>{clients}：kvswitch 从现在起让它们保持同步（它们的配置文件在下次切换时写入）。要从其中一个的配置生成配置方案，请在“检测客户端”窗口中选中它，然后点击“生成配置方案”。</translation>
    </message>
    <message>
        <source>{model} at {url}</source>
        <translation>{model}，位于 {url}</translation>
    </message>
    <message>
        <source>{name} is the active profile now.</source>
        <translation>{name} 现在是当前配置方案。</translation>
    </message>
    <message>
        <source>The key in its file is stored in the OS keyring.</source>
        <translation>其配置文件中的密钥已存入系统密钥环。</translation>
    </message>
    <message>
        <source>The key in its file was not stored: the profile sends none until you store one (API key…).</source>
        <translation>其配置文件中的密钥未保存：在你保存密钥之前，该配置方案不发送密钥（API 密钥…）。</translation>
    </message>
    <message>
        <source>Render it into your clients with Profile ▸ {name}.</source>
        <translation>用 配置方案 ▸ {name} 把它写入你的客户端。</translation>
    </message>
    <message>
        <source>Profile {name} made from {client}</source>
        <translation>已从 {client} 生成配置方案 {name}</translation>
    </message>
    <message>
        <source>Profile saved</source>
        <translation>配置方案已保存</translation>
    </message>
    <message>
        <source>{name} saved in kvswitch.toml; applying it to the clients…</source>
        <translation>{name} 已保存到 kvswitch.toml；正在应用到客户端…</translation>
    </message>
    <message>
        <source>{name} saved in kvswitch.toml; the clients follow when you apply it (Profile menu) or the watcher propagates it.</source>
        <translation>{name} 已保存到 kvswitch.toml；当你应用它（配置方案菜单）或监视器传播它时，客户端会随之更新。</translation>
    </message>
    <message>
        <source>API key stored</source>
        <translation>API 密钥已保存</translation>
    </message>
    <message>
        <source>the key of {name} ({masked}) is in the OS keyring; writing it into the clients…</source>
        <translation>{name} 的密钥（{masked}）已存入系统密钥环；正在写入客户端…</translation>
    </message>
    <message>
        <source>the key of {name} ({masked}) is in the OS keyring.</source>
        <translation>{name} 的密钥（{masked}）已存入系统密钥环。</translation>
    </message>
    <message>
        <source>Language not saved</source>
        <translation>语言未保存</translation>
    </message>
    <message>
        <source>the system&apos;s language</source>
        <translation>系统语言</translation>
    </message>
    <message>
        <source>kvswitch-tray uses {language}.</source>
        <translation>kvswitch-tray 正在使用 {language}。</translation>
    </message>
    <message>
        <source>kvswitch-tray uses {language} from its next start: quit it and start it again.</source>
        <translation>kvswitch-tray 将从下次启动起使用 {language}：请退出后重新启动。</translation>
    </message>
    <message>
        <source>Language saved</source>
        <translation>语言已保存</translation>
    </message>
    <message>
        <source>Launch at login not changed</source>
        <translation>登录时启动未更改</translation>
    </message>
    <message>
        <source>Launch at login on</source>
        <translation>已开启登录时启动</translation>
    </message>
    <message>
        <source>kvswitch-tray starts when you log in ({path}).</source>
        <translation>登录时将启动 kvswitch-tray（{path}）。</translation>
    </message>
    <message>
        <source>Launch at login off</source>
        <translation>已关闭登录时启动</translation>
    </message>
    <message>
        <source>kvswitch-tray no longer starts when you log in.</source>
        <translation>登录时不再启动 kvswitch-tray。</translation>
    </message>
</context>
<context>
    <name>app</name>
    <message>
        <source>pid {pid}</source>
        <translation>进程 {pid}</translation>
    </message>
    <message>
        <source>another process</source>
        <translation>另一个进程</translation>
    </message>
    <message>
        <source>no system tray yet; waiting up to {seconds} s for one (--tray-wait)</source>
        <translation>尚无系统托盘；最多等待 {seconds} 秒（--tray-wait）</translation>
    </message>
    <message>
        <source>a system tray appeared; the icon is in it</source>
        <translation>系统托盘已出现；图标已放入其中</translation>
    </message>
    <message>
        <source>no system tray appeared; opening the window (kvswitch moves to the tray if one appears later)</source>
        <translation>没有出现系统托盘；打开窗口（如果之后出现托盘，kvswitch 会移到托盘中）</translation>
    </message>
    <message>
        <source>a system tray appeared; moving from the window to the tray</source>
        <translation>系统托盘已出现；从窗口移到托盘</translation>
    </message>
    <message>
        <source>No system tray</source>
        <translation>没有系统托盘</translation>
    </message>
    <message>
        <source>This desktop shows no system tray, so kvswitch runs in this window; closing it quits. If a system tray appears later, kvswitch moves there.</source>
        <translation>此桌面没有系统托盘，因此 kvswitch 在这个窗口中运行；关闭窗口即退出。如果之后出现系统托盘，kvswitch 会移到托盘中。</translation>
    </message>
    <message>
        <source>kvswitch moved to the system tray</source>
        <translation>kvswitch 已移到系统托盘</translation>
    </message>
    <message>
        <source>A system tray appeared, so kvswitch closed its window; its icon is in the tray now.</source>
        <translation>系统托盘已出现，kvswitch 关闭了窗口；它的图标现在在托盘中。</translation>
    </message>
    <message>
        <source>expected a number of seconds (0 or more), got {value}</source>
        <translation>需要一个秒数（0 或更大），得到的是 {value}</translation>
    </message>
    <message>
        <source>with no system tray yet (a session that starts before its panel), wait this long for one before opening the window (default: {default}); 0: do not wait</source>
        <translation>尚无系统托盘时（会话早于面板启动），打开窗口前等待托盘的秒数（默认：{default}）；0：不等待</translation>
    </message>
    <message>
        <source>kvswitch in the system tray: switch modes and profiles, watch the clients, run the probe.</source>
        <translation>系统托盘中的 kvswitch：切换模式和配置方案，监视客户端，运行探测。</translation>
    </message>
    <message>
        <source>do not start the file watcher (also: {variable}=1); it can be turned on from the menu</source>
        <translation>不启动文件监视器（也可设置 {variable}=1）；之后可从菜单中开启</translation>
    </message>
    <message>
        <source>use the window even when a system tray is available</source>
        <translation>即使有系统托盘也使用窗口</translation>
    </message>
    <message>
        <source>add kvswitch-tray to your applications menu (its desktop entry and icons, for this user) and exit</source>
        <translation>将 kvswitch-tray 加入应用程序菜单（为当前用户安装桌面项和图标）后退出</translation>
    </message>
    <message>
        <source>remove what --install added, and the launch-at-login item, and exit</source>
        <translation>移除 --install 添加的内容和登录启动项后退出</translation>
    </message>
    <message>
        <source>kvswitch-tray is already running for this kvswitch home ({holder}); brought it to the front</source>
        <translation>kvswitch-tray 已在为此 kvswitch 主目录运行（{holder}）；已将它切到前台</translation>
    </message>
    <message>
        <source>kvswitch-tray is already running for this kvswitch home ({holder})</source>
        <translation>kvswitch-tray 已在为此 kvswitch 主目录运行（{holder}）</translation>
    </message>
</context>
<context>
    <name>charts</name>
    <message>
        <source>Time to first token per request</source>
        <translation>每个请求的首 token 延迟</translation>
    </message>
    <message>
        <source>{mode}: median {median} ms over {count} requests</source>
        <translation>{mode}：{count} 个请求的中位数 {median} 毫秒</translation>
    </message>
    <message>
        <source>TTFT (ms)</source>
        <translation>首 token 延迟 TTFT（毫秒）</translation>
    </message>
    <message>
        <source>no successful requests</source>
        <translation>没有成功的请求</translation>
    </message>
    <message>
        <source>median {median} ms</source>
        <translation>中位数 {median} 毫秒</translation>
    </message>
    <message>
        <source>GPU memory used over the probe</source>
        <translation>探测期间的 GPU 显存占用</translation>
    </message>
    <message>
        <source>GPU memory: n/a: {reason}</source>
        <translation>GPU 显存：不可用：{reason}</translation>
    </message>
    <message>
        <source>GPU memory: no samples over time in this report (per-mode baseline and peak, where known, are in the table)</source>
        <translation>GPU 显存：本报告没有随时间的采样（已知的各模式基线和峰值见表格）</translation>
    </message>
    <message>
        <source>{count} GPU(s) sampled</source>
        <translation>采样了 {count} 块 GPU</translation>
    </message>
    <message>
        <source>time since the first sample (s)</source>
        <translation>距第一次采样的时间（秒）</translation>
    </message>
</context>
<context>
    <name>jobs</name>
    <message>
        <source>missing</source>
        <translation>缺失</translation>
    </message>
    <message>
        <source>invalid: {problem}</source>
        <translation>无效：{problem}</translation>
    </message>
    <message>
        <source>no profile yet</source>
        <translation>尚无配置方案</translation>
    </message>
    <message>
        <source>via gateway · {mode}</source>
        <translation>经由网关 · {mode}</translation>
    </message>
    <message>
        <source>via gateway, not running</source>
        <translation>经由网关，网关未运行</translation>
    </message>
    <message>
        <source>no mode</source>
        <translation>无模式</translation>
    </message>
    <message>
        <source>{mode}, in sync</source>
        <translation>{mode}，已同步</translation>
    </message>
    <message>
        <source>{mode}, drifted: {fields}</source>
        <translation>{mode}，已偏离：{fields}</translation>
    </message>
    <message>
        <source>{title} · changed outside</source>
        <translation>{title} · 在外部被修改</translation>
    </message>
    <message>
        <source>{problem} (line {line})</source>
        <translation>{problem}（第 {line} 行）</translation>
    </message>
    <message>
        <source>Gateway: on, {mode} — {url}</source>
        <translation>网关：运行中，{mode} — {url}</translation>
    </message>
    <message>
        <source>Gateway: unknown ({problem})</source>
        <translation>网关：状态未知（{problem}）</translation>
    </message>
    <message>
        <source>Gateway: off</source>
        <translation>网关：已关闭</translation>
    </message>
    <message>
        <source>route: default ({mode})</source>
        <translation>路由：默认（{mode}）</translation>
    </message>
    <message>
        <source>route: {route}</source>
        <translation>路由：{route}</translation>
    </message>
    <message>
        <source>no figures: {problem}</source>
        <translation>没有数据：{problem}</translation>
    </message>
    <message>
        <source>kvswitch.toml does not read, so the gateway&apos;s token is unknown</source>
        <translation>kvswitch.toml 无法读取，因此网关的令牌未知</translation>
    </message>
    <message>
        <source>the gateway&apos;s token: {problem}</source>
        <translation>网关的令牌：{problem}</translation>
    </message>
    <message>
        <source>${name} (the gateway&apos;s token) is not set where the tray runs</source>
        <translation>${name}（网关的令牌）在托盘运行的环境中未设置</translation>
    </message>
    <message>
        <source>the keyring holds no gateway token yet (kvswitch gateway pin makes one)</source>
        <translation>系统密钥环中尚无网关令牌（kvswitch gateway pin 会生成一个）</translation>
    </message>
    <message>
        <source>last probe {when}: TTFT median {figures}</source>
        <translation>上次探测 {when}：首 token 延迟（TTFT）中位数 {figures}</translation>
    </message>
    <message>
        <source>last probe: TTFT median {figures}</source>
        <translation>上次探测：首 token 延迟（TTFT）中位数 {figures}</translation>
    </message>
</context>
</TS>
