# The probe as it ran on the H200 on 2026-12-04 (transformers 5.17.0, torch
# 2.11.0): the device call sends the lead's checkout, so it went there
# gzip'd and base64'd inside the command (2,000 characters at most), hence
# the density. Run from the repository root:
#   python3 tests/arch/probe_refusals.py /tmp/w
# It prints one JSON line, then writes tests/arch/data-style cases under
# /tmp/w/new (llama_window_f32 and llama_tied_head_only_f32 are committed;
# mistral_layer_types_f32 failed in transformers). What it measured:
#  llama_win (tiny Llama, sliding_window 6, prompt 12, 8 greedy steps):
#    "un" 0.0 (one forward: equal to the same weights without the key);
#    "ca" 0.0 on the 12 prompt rows, 0.97-1.6 relative L2 on the 7 decode
#    rows (generate's cache keeps sliding_window - 1 keys), ids differ from
#    the 2nd on; "ca_w" (the same weights as Mistral, windowed) differs from row 6.
#  mis_lt (Mistral, sliding_window 6, layer_types [full, sliding], top-level
#    rope_theta): TypeError "unsupported operand type(s) for ** or pow():
#    'NoneType' and 'float'" building the model.
#  tie (tied Llama, checkpoint with lm_head.weight only): missing keys
#    set(); embedding == head == the file's tensor, one storage; logits
#    equal (0.0) to the ordinary tied checkpoint. save_pretrained of a tied
#    model writes model.embed_tokens.weight only.
import sys,os,json,shutil,torch
sys.path.insert(0,'tests/arch');import gen_reference as g
from safetensors.torch import load_file as L,save_file as S
import transformers as T
R={};A='eager';O=sys.argv[1];t=g.tiny;J=os.path.join;FA,SA='full_attention','sliding_attention'
def wc(p,c):json.dump(c,open(J(p,'config.json'),'w'))
def sv(p,c,s=5):
 os.makedirs(p);wc(p,c);torch.manual_seed(s);m=g.AutoModelForCausalLM.from_config(g.AutoConfig.from_pretrained(p),attn_implementation=A);g.randomize(m,s);m.save_pretrained(p);wc(p,c);return p
def va(b,p,**e):
 shutil.copytree(b,p);c=json.load(open(J(b,'config.json')));c.update(e);wc(p,c);return p
def ld(p):m=g.load_f64(p);m.eval();g.rebuild_rotary(m);return m
def un(m,x):
 with g.f64_everywhere(),torch.no_grad():return m(input_ids=torch.tensor([x]),use_cache=False).logits[0].double()
def ca(m,x):
 with g.f64_everywhere():return g.greedy(m,x,8,[])
def rl(a,b):return [float('%.1e'%v) for v in ((a-b).norm(dim=-1)/b.norm(dim=-1))]
x=torch.randint(0,128,(12,),generator=torch.Generator().manual_seed(7)).tolist()
def pr(k,b,v,w):
 r={};R[k]=r
 try:
  mb,mv,mw=ld(b),ld(v),ld(w)
  r['un']=max(rl(un(mv,x),un(mb,x)))
  a,i=ca(mv,x);c,j=ca(mb,x);d,h=ca(mw,x);r['ids']=[i,j,h];r['ca']=rl(a,c);r['ca_w']=rl(a,d)
 except Exception as e:r['err']=repr(e)[:400]
lb=sv(O+'/lb',t('llama'))
pr('llama_win',lb,va(lb,O+'/lw',sliding_window=6),va(lb,O+'/lm',sliding_window=6,model_type='mistral',architectures=['MistralForCausalLM']))
mb=sv(O+'/mb',t('mistral',sliding_window=6))
pr('mis_lt',mb,va(mb,O+'/ml',layer_types=[FA,SA]),va(mb,O+'/mf',sliding_window=None))
tb=sv(O+'/tb',t('llama',tie_word_embeddings=True));d=L(J(tb,'model.safetensors'));r={'k':[k for k in d if 'lay' not in k]};R['tie']=r
X=d.pop('model.embed_tokens.weight');d['lm_head.weight']=X;th=va(tb,O+'/th');S(d,J(th,'model.safetensors'),{'format':'pt'})
try:
  m,i=g.AutoModelForCausalLM.from_pretrained(th,dtype=torch.float64,attn_implementation=A,output_loading_info=True);m.eval();g.rebuild_rotary(m);E=m.model.embed_tokens.weight;H=m.lm_head.weight
  r.update(miss=str(i.get('missing_keys')),e=bool(torch.equal(E,X.double())),h=bool(torch.equal(H,X.double())),same=E.data_ptr()==H.data_ptr(),un=max(rl(un(m,x),un(ld(tb),x))))
except Exception as e:r['err']=repr(e)[:400]
print(json.dumps(R))
def cs(n,p,c,**k):return dict(name=n,dtype='f32',prompt=p,steps=8,config=c,**k)
C=[cs('llama_window_f32',10,t('llama',sliding_window=17)),cs('mistral_layer_types_f32',12,t('mistral',sliding_window=6,layer_types=[FA,SA])),cs('llama_tied_head_only_f32',10,t('llama',tie_word_embeddings=True),head_only=True)]
sp=T.PreTrainedModel.save_pretrained
def hs(self,p,**k):
 sp(self,p,**k);f=J(p,'model.safetensors');d=L(f);e=d.pop('model.embed_tokens.weight');d.setdefault('lm_head.weight',e);S(d,f,{'format':'pt'})
for n,c in enumerate(C):
 T.PreTrainedModel.save_pretrained=hs if c.get('head_only') else sp
 try:g.make_case(c,O+'/new',1032+n)
 except Exception as e:print(e)
